// The voice catalogue served at GET /v1/voices. `voice_id` is what agents and numbers
// store; `provider_voices` is what each text-to-speech provider knows it by (internal:
// the API serves neither it nor `provider_voice`), so an agent keeps its voice when the
// operator switches TTS_PROVIDER.
//
// The Cartesia ids are voices of Cartesia's public library, matched on gender and on
// use (conversation and customer support, the phone's job). Their names and ids are
// from the library as Cartesia's voice list returned it (a `GET /voices` dump of
// 2024-11-16 in github.com/hsakamotoFG/speaking-meeting-bot config/available_voices.md;
// the same id/name pairs appear in SignalWire's Cartesia voice table and, for "Barbershop
// Man" and "Sarah", in Cartesia's own README and docs examples). Cartesia's library has no
// voice tagged gender-neutral, so the neutral voice takes the one whose name and
// description give no gender ("Friendly Sidekick"). All of them are multilingual on
// sonic-2 and later.

export type TtsProviderName = 'openai' | 'cartesia';

export interface Voice {
  voice_id: string;
  name: string;
  gender: 'female' | 'male' | 'neutral';
  languages: string[];
  provider: string;
  /** The OpenAI voice (same as `provider_voices.openai`; kept for existing callers). */
  provider_voice: string;
  provider_voices: Record<TtsProviderName, string>;
}

const ALL = ['multi', 'en', 'es', 'fr', 'de', 'it', 'pt', 'nl', 'hi', 'ru', 'ja', 'ar', 'he', 'ko', 'zh', 'pl'];

function voice(voice_id: string, gender: Voice['gender'], openai: string, cartesia: string): Voice {
  return { voice_id, name: voice_id, gender, languages: ALL, provider: 'openai', provider_voice: openai, provider_voices: { openai, cartesia } };
}

export const VOICES: readonly Voice[] = [
  voice('Ashley', 'female', 'shimmer', '694f9389-aac1-45b6-b726-9d9369183238'), // Sarah: natural, conversational, customer support
  voice('Brian', 'male', 'onyx', 'a167e0f3-df7e-4d52-a9c3-f949145efdab'), // Customer Support Man: clear and calm
  voice('Nova', 'female', 'nova', '156fb8d2-335b-4950-9cb3-a2d33befec77'), // Helpful Woman: friendly, customer support
  voice('Echo', 'male', 'echo', 'a0e99841-438c-4a64-b679-ae501e7d6091'), // Barbershop Man: smooth, casual conversation
  voice('Sage', 'female', 'sage', '829ccd10-f8b3-43cd-b8a0-4aeaa81f3b30'), // Customer Support Lady: polite and helpful
  voice('Alloy', 'neutral', 'alloy', 'e00d0e4c-a5c8-443f-a8a3-473eb9a62355'), // Friendly Sidekick: friendly and supportive
  voice('Ash', 'male', 'ash', 'ee7ea9f8-c0c1-498c-9279-764d6b56d189'), // Polite Man: conversational, customer support
  voice('Coral', 'female', 'coral', '248be419-c632-4f23-adf1-5324ed7dbf1d'), // Professional Woman: calm, call center
  voice('Fable', 'male', 'fable', '95856005-0332-41b0-935f-352e296aa0df'), // Classy British Man: light, casual conversation
];

const byId = new Map(VOICES.map((v) => [v.voice_id, v]));

/** The voice used when a stored voice id is no longer in the catalogue. */
export const DEFAULT_VOICE_ID = 'Ashley';

/** Exact, case-sensitive match: `ashley` is not a voice id. */
export const findVoice = (voiceId: string): Voice | undefined => byId.get(voiceId);

/**
 * What `provider` calls our voice `voiceId`. An id the catalogue no longer has (a voice
 * retired after an agent stored it) speaks with the default voice rather than failing
 * the call: a live caller must hear something.
 */
export function providerVoice(voiceId: string, provider: TtsProviderName): string {
  return (byId.get(voiceId) ?? byId.get(DEFAULT_VOICE_ID)!).provider_voices[provider];
}

/** Languages an agent may be set to (api.md). */
export const LANGUAGES = ALL;
