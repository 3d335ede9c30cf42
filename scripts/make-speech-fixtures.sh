#!/usr/bin/env bash
# Makes the real-speech fixtures the voice tests play as the caller: each phrase below is
# spoken by espeak-ng (Debian package `espeak-ng`), band-limited to the telephone band
# (300–3400 Hz, as a PSTN line would), resampled to 8 kHz, trimmed of espeak's leading and
# trailing silence and stored as raw G.711 μ-law (no header: what a carrier's media stream
# carries) in test/fixtures/speech/<slug>.ulaw, 8 bytes a millisecond. manifest.json lists
# every file's slug, text, voice and length. The files are committed, so tests and CI need
# neither tool; run this again (needs espeak-ng and ffmpeg) after changing a phrase, and
# keep SPEECH_FIXTURE_SLUGS in test/fixtures/speech/speech.ts in step with the list.
# Two voices (a male en-us and the female variant en-us+f3) so the detector is not tuned
# to one speaker. The output depends only on the tools' versions: re-running is safe.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=test/fixtures/speech

for tool in espeak-ng ffmpeg; do
  command -v "$tool" >/dev/null || { echo "make-speech-fixtures: needs $tool (apt-get install -y $tool)" >&2; exit 1; }
done

# slug | espeak voice | the caller's words
PHRASES=(
  "book-table|en-us|Hi, I would like to book a table for two tomorrow evening."
  "saturday-hours|en-us+f3|What time do you open on Saturday?"
  "uh-huh|en-us|Uh-huh."
  "okay|en-us+f3|Okay."
  "yeah|en-us|Yeah."
  "repeat-please|en-us+f3|Actually, wait, can you repeat that please?"
  "thank-you-goodbye|en-us|Thank you, goodbye."
  "maria-order|en-us+f3|My name is Maria and I am calling about my order."
)

# Trim: drop leading audio under -50 dB, then the same at the end (reverse, trim, reverse).
TRIM="silenceremove=start_periods=1:start_threshold=-50dB,areverse,silenceremove=start_periods=1:start_threshold=-50dB,areverse"
FILTERS="highpass=f=300,lowpass=f=3400,$TRIM"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

entries=()
for line in "${PHRASES[@]}"; do
  IFS='|' read -r slug voice text <<<"$line"
  espeak-ng -v "$voice" -w "$tmp/$slug.wav" "$text"
  ffmpeg -hide_banner -loglevel error -y -i "$tmp/$slug.wav" -af "$FILTERS" \
    -ar 8000 -ac 1 -c:a pcm_mulaw -f mulaw "$OUT/$slug.ulaw"
  bytes=$(stat -c %s "$OUT/$slug.ulaw")
  json_text=$(printf '%s' "$text" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')
  entries+=("    { \"slug\": \"$slug\", \"file\": \"$slug.ulaw\", \"text\": \"$json_text\", \"voice\": \"$voice\", \"durationMs\": $((bytes / 8)) }")
  echo "$OUT/$slug.ulaw: $((bytes / 8)) ms"
done

{
  echo '{'
  echo '  "format": "G.711 mu-law, 8000 Hz, mono, raw",'
  echo "  \"madeWith\": \"$(espeak-ng --version | head -1 | sed 's/ *Data at.*//'); scripts/make-speech-fixtures.sh\","
  echo '  "fixtures": ['
  last=$((${#entries[@]} - 1))
  for i in "${!entries[@]}"; do
    if [ "$i" -lt "$last" ]; then echo "${entries[$i]},"; else echo "${entries[$i]}"; fi
  done
  echo '  ]'
  echo '}'
} >"$OUT/manifest.json"
echo "$OUT/manifest.json"
