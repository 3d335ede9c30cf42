#!/usr/bin/env bash
# Makes the voicemail greeting the voicemail tests play as an answering machine
# (test/fixtures/voicemail/greeting.ulaw): the same recipe as make-speech-fixtures.sh
# (espeak-ng, telephone band 300–3400 Hz, 8 kHz, trimmed, raw G.711 μ-law), kept apart
# from the caller phrases so the voice-activity tests and the bench, which run over every
# caller phrase, are not changed by it. The beep is not in the file: tests append a
# generated one (voice/audio/beep.ts generateBeep). Needs espeak-ng and ffmpeg; the file
# is committed, so tests and CI need neither.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=test/fixtures/voicemail
TEXT="Hi, you have reached Sam. I am not available right now. Please leave a message after the tone."
VOICE="en-us+f3"
TRIM="silenceremove=start_periods=1:start_threshold=-50dB,areverse,silenceremove=start_periods=1:start_threshold=-50dB,areverse"

for tool in espeak-ng ffmpeg; do
  command -v "$tool" >/dev/null || { echo "make-voicemail-fixture: needs $tool (apt-get install -y $tool)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$OUT"
espeak-ng -v "$VOICE" -w "$tmp/greeting.wav" "$TEXT"
ffmpeg -hide_banner -loglevel error -y -i "$tmp/greeting.wav" -af "highpass=f=300,lowpass=f=3400,$TRIM" \
  -ar 8000 -ac 1 -c:a pcm_mulaw -f mulaw "$OUT/greeting.ulaw"
echo "$OUT/greeting.ulaw: $(( $(stat -c %s "$OUT/greeting.ulaw") / 8 )) ms"
