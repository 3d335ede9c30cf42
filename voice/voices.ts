// The voice catalogue served at GET /v1/voices. `voice_id` is what agents and numbers
// store; `provider_voice` is the name the text-to-speech provider knows it by.

export interface Voice {
  voice_id: string;
  name: string;
  gender: 'female' | 'male' | 'neutral';
  languages: string[];
  provider: string;
  provider_voice: string;
}

const ALL = ['multi', 'en', 'es', 'fr', 'de', 'it', 'pt', 'nl', 'hi', 'ru', 'ja', 'ar', 'he', 'ko', 'zh', 'pl'];

export const VOICES: readonly Voice[] = [
  { voice_id: 'Ashley', name: 'Ashley', gender: 'female', languages: ALL, provider: 'openai', provider_voice: 'shimmer' },
  { voice_id: 'Brian', name: 'Brian', gender: 'male', languages: ALL, provider: 'openai', provider_voice: 'onyx' },
  { voice_id: 'Nova', name: 'Nova', gender: 'female', languages: ALL, provider: 'openai', provider_voice: 'nova' },
  { voice_id: 'Echo', name: 'Echo', gender: 'male', languages: ALL, provider: 'openai', provider_voice: 'echo' },
  { voice_id: 'Sage', name: 'Sage', gender: 'female', languages: ALL, provider: 'openai', provider_voice: 'sage' },
  { voice_id: 'Alloy', name: 'Alloy', gender: 'neutral', languages: ALL, provider: 'openai', provider_voice: 'alloy' },
  { voice_id: 'Ash', name: 'Ash', gender: 'male', languages: ALL, provider: 'openai', provider_voice: 'ash' },
  { voice_id: 'Coral', name: 'Coral', gender: 'female', languages: ALL, provider: 'openai', provider_voice: 'coral' },
  { voice_id: 'Fable', name: 'Fable', gender: 'male', languages: ALL, provider: 'openai', provider_voice: 'fable' },
];

const byId = new Map(VOICES.map((v) => [v.voice_id, v]));

/** Exact, case-sensitive match: `ashley` is not a voice id. */
export const findVoice = (voiceId: string): Voice | undefined => byId.get(voiceId);

/** Languages an agent may be set to (api.md). */
export const LANGUAGES = ALL;
