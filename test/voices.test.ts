// The voice catalogue endpoint: its shape, that it includes the default voice, that
// the provider's internal voice name stays hidden, and that agents accept exactly it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from './helpers/server.ts';
import { DEFAULT_VOICE_ID, providerVoice, VOICES } from '../voice/voices.ts';

let server: TestServer;
let key: string;
beforeAll(async () => {
  server = await startTestServer();
  ({ key } = await server.newAccount());
});
afterAll(() => server.close());

describe('GET /v1/voices', () => {
  it('lists every voice with its public fields, Ashley included, unpaginated', async () => {
    const res = await server.request('GET', '/v1/voices', { key });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['count', 'voices']);
    expect(res.body.count).toBe(res.body.voices.length);
    expect(res.body.count).toBeGreaterThanOrEqual(1);
    for (const v of res.body.voices) {
      expect(Object.keys(v).sort()).toEqual(['gender', 'languages', 'name', 'provider', 'voice_id']);
      expect(['female', 'male', 'neutral']).toContain(v.gender);
      expect(v.languages).toContain('multi');
    }
    expect(res.body.voices.find((v: { voice_id: string }) => v.voice_id === 'Ashley')).toMatchObject({ name: 'Ashley', gender: 'female' });
    expect(res.text).not.toContain('provider_voice');
    for (const v of VOICES) expect(res.text).not.toContain(v.provider_voices.cartesia);
    // Ignores pagination parameters rather than cutting the list.
    expect((await server.request('GET', '/v1/voices?limit=1', { key })).body.count).toBe(res.body.count);
  });

  it('needs a key', async () => {
    expectError(await server.request('GET', '/v1/voices'), 401, 'authentication_error', 'invalid_api_key');
  });

  it('is exactly the set of voice ids an agent accepts', async () => {
    const { voices } = (await server.request('GET', '/v1/voices', { key })).body;
    for (const v of voices) {
      const res = await server.request('POST', '/v1/agents', { key, body: { voice_id: v.voice_id } });
      expect(res.status, res.text).toBe(201);
      expect(res.body.voice_id).toBe(v.voice_id);
      const lower = await server.request('POST', '/v1/agents', { key, body: { voice_id: v.voice_id.toLowerCase() } });
      expectError(lower, 400, 'invalid_request', 'invalid_voice_id');
    }
  });
});

describe('provider voices', () => {
  it('names every voice at each text-to-speech provider', () => {
    const cartesiaIds = VOICES.map((v) => providerVoice(v.voice_id, 'cartesia'));
    for (const id of cartesiaIds) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(new Set(cartesiaIds).size).toBe(VOICES.length); // no two of our voices sound the same
    expect(providerVoice('Ashley', 'openai')).toBe('shimmer');
    expect(providerVoice('Brian', 'cartesia')).toBe('a167e0f3-df7e-4d52-a9c3-f949145efdab');
    for (const v of VOICES) expect(providerVoice(v.voice_id, 'openai')).toBe(v.provider_voice);
  });

  it('speaks with the default voice when a stored voice id is no longer in the catalogue', () => {
    expect(providerVoice('Retired', 'cartesia')).toBe(providerVoice(DEFAULT_VOICE_ID, 'cartesia'));
    expect(providerVoice('ashley', 'openai')).toBe(providerVoice(DEFAULT_VOICE_ID, 'openai'));
  });
});
