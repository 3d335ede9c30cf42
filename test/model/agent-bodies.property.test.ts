// Property test of agent bodies: fast-check builds create and update bodies, valid
// ones and ones with exactly one defect (out-of-range number, wrong JSON type, unknown
// field, bad enum, too-long string, deprecated field), and a small model predicts the
// answer. Accepted values must read back exactly, the only changes being speaking_rate
// clamped to 0.5..1.5 and "" read as null on nullable text; rejected bodies must name
// the field with the right code and leave the account's agents as they were.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestResponse, type TestServer } from '../helpers/server.ts';

let server: TestServer;
/** Settings of an agent created with `{}`: the defaults, as a client sees them. */
let defaults: Record<string, unknown>;

const READ_ONLY = ['id', 'agent_id', 'api_key_id', 'created_at', 'updated_at'];
const DEPRECATED = ['twilio_account_sid', 'twilio_auth_token'];
const strip = (agent: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(agent).filter(([k]) => !READ_ONLY.includes(k)));

beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_READS_PER_MIN: '1000000', RATE_LIMIT_WRITES_PER_MIN: '1000000' });
  const { key } = await server.newAccount();
  defaults = strip((await server.request('POST', '/v1/agents', { key, body: {} })).body);
});
afterAll(() => server.close());

// ---- the field catalogue, as a client reads it from api.md and contract.md ----

type Kind = 'string' | 'nullable-string' | 'number' | 'nullable-number' | 'int' | 'bool' | 'nullable-bool' | 'array';

const VOICES = ['Ashley', 'Brian', 'Nova', 'Echo', 'Sage', 'Alloy', 'Ash', 'Coral', 'Fable'];
const LANGUAGES = ['multi', 'en', 'es', 'fr', 'de', 'it', 'pt', 'nl', 'hi', 'ru', 'ja', 'ar', 'he', 'ko', 'zh', 'pl'];
const ZONES = ['America/New_York', 'Europe/London', 'Asia/Tokyo', 'UTC', 'Australia/Sydney', 'America/Sao_Paulo'];

// Text with multi-unit characters, quotes, commas and whitespace; at most 2 UTF-16 units each.
const char = fc.constantFrom('a', 'Z', '7', ' ', 'é', 'ß', '中', '😀', '\n', '"', '\\', ',', '.');
const text = (minLength: number, maxLength: number) => fc.string({ unit: char, minLength, maxLength });
/** Just past a length limit, usually by one. */
const tooLong = (limit: number) => fc.oneof(fc.constant(limit + 1), fc.integer({ min: limit + 1, max: limit + 50 })).map((n) => 'a'.repeat(n));
const cleared = fc.constantFrom(null, '');
const e164 = fc.stringMatching(/^\+[1-9]\d{7,14}$/);
const word = fc.stringMatching(/^[A-Za-z][A-Za-z.']{0,9}$/);
const words = (min: number, max: number) => fc.array(word, { minLength: min, maxLength: max }).map((ws) => ws.join(', '));
const inRange = (min: number, max: number) => fc.double({ min, max, noNaN: true });
const finite = fc.double({ noNaN: true, noDefaultInfinity: true });

const extractionField = (name: fc.Arbitrary<string>) =>
  fc.oneof(
    fc.record({ name, type: fc.constantFrom('string', 'number', 'integer', 'boolean'), description: text(1, 30) }),
    fc.record({ name, type: fc.constant('string'), description: text(1, 30), enum: fc.uniqueArray(text(1, 10), { minLength: 1, maxLength: 5 }) }),
  );
const snake = fc.stringMatching(/^[a-z][a-z0-9_]{0,20}$/);
const extractionFields = fc
  .uniqueArray(snake, { maxLength: 20 })
  .chain((names) => fc.tuple(...names.map((n) => extractionField(fc.constant(n)))).map((fs) => fs as Record<string, unknown>[]));

interface Field {
  kind: Kind;
  valid: fc.Arbitrary<unknown>;
  /** Values of the right JSON type that break a rule. */
  invalid?: fc.Arbitrary<unknown>;
  /** The code any bad value answers with (default invalid_request). */
  code?: string;
  /** Code for a value of the right type that breaks the rule, when it differs. */
  ruleCode?: string;
}

const FIELDS: Record<string, Field> = {
  name: { kind: 'string', valid: text(1, 50), invalid: fc.oneof(fc.constant(''), tooLong(100)) },
  system_prompt: {
    kind: 'string',
    valid: fc.oneof(text(0, 80), fc.constant('p'.repeat(16000))),
    invalid: tooLong(16000),
    ruleCode: 'prompt_too_long',
  },
  welcome_message: { kind: 'string', valid: text(0, 60), invalid: tooLong(2000) },
  voice_id: { kind: 'string', valid: fc.constantFrom(...VOICES), invalid: fc.oneof(fc.constantFrom('ashley', 'BRIAN', '', 'Shimmer', 'shimmer', 'Ashley '), fc.stringMatching(/^[a-z]{1,8}$/)), code: 'invalid_voice_id' },
  language: { kind: 'string', valid: fc.constantFrom(...LANGUAGES), invalid: fc.constantFrom('EN', 'english', 'en-US', '', 'xx'), code: 'invalid_language' },
  is_active: { kind: 'bool', valid: fc.boolean() },
  temperature: { kind: 'number', valid: inRange(0, 1), invalid: fc.oneof(inRange(1.000001, 1e6), inRange(-1e6, -1e-9)) },
  response_length: { kind: 'string', valid: fc.constantFrom('short', 'medium', 'long'), invalid: fc.constantFrom('tiny', 'SHORT', '', 'longer') },
  ai_speaks_first: { kind: 'bool', valid: fc.boolean() },
  dynamic_greeting: { kind: 'bool', valid: fc.boolean() },
  interruption_sensitivity: { kind: 'int', valid: fc.integer({ min: 0, max: 100 }), invalid: fc.oneof(fc.integer({ min: 101, max: 10_000 }), fc.integer({ min: -10_000, max: -1 }), inRange(0.01, 99.99).filter((x) => !Number.isInteger(x))) },
  response_eagerness: { kind: 'int', valid: fc.integer({ min: 0, max: 1000 }), invalid: fc.oneof(fc.integer({ min: 1001, max: 100_000 }), fc.integer({ min: -100, max: -1 })) },
  boosted_keywords: { kind: 'nullable-string', valid: fc.oneof(cleared, words(0, 50)), invalid: words(51, 70) },
  pickup_delay: { kind: 'int', valid: fc.integer({ min: 5, max: 30 }), invalid: fc.oneof(fc.integer({ min: 31, max: 1000 }), fc.integer({ min: -5, max: 4 }), inRange(5.01, 29.99).filter((x) => !Number.isInteger(x))) },
  max_call_duration_seconds: { kind: 'int', valid: fc.integer({ min: 60, max: 1800 }), invalid: fc.oneof(fc.integer({ min: 1801, max: 100_000 }), fc.integer({ min: 0, max: 59 })) },
  silence_hangup_seconds: { kind: 'int', valid: fc.integer({ min: 5, max: 45 }), invalid: fc.oneof(fc.integer({ min: 46, max: 1000 }), fc.integer({ min: 0, max: 4 })) },
  record_call: { kind: 'bool', valid: fc.boolean() },
  recording_source: { kind: 'string', valid: fc.constantFrom('provider', 'platform'), invalid: fc.constantFrom('carrier', 'Provider', '', 'both'), code: 'invalid_recording_source' },
  amd_enabled: { kind: 'bool', valid: fc.boolean() },
  dtmf_enabled: { kind: 'nullable-bool', valid: fc.option(fc.boolean(), { nil: null }) },
  require_booking_confirmation: { kind: 'bool', valid: fc.boolean() },
  webhook_url: {
    kind: 'nullable-string',
    valid: fc.oneof(cleared, fc.tuple(fc.constantFrom('example.com', 'hooks.example.org', 'api.acme.io:8443'), fc.stringMatching(/^[a-z0-9/]{0,12}$/)).map(([h, p]) => `https://${h}/${p}`)),
    invalid: fc.constantFrom('http://example.com/h', 'example.com/h', 'https://127.0.0.1/h', 'https://localhost/h', 'https://192.168.1.4/h', 'ftp://example.com'),
    code: 'invalid_url',
  },
  func_end_call: { kind: 'bool', valid: fc.boolean() },
  transfer_whisper: { kind: 'nullable-string', valid: fc.oneof(cleared, text(1, 60)), invalid: tooLong(2000) },
  func_send_sms: { kind: 'bool', valid: fc.boolean() },
  incall_sms_enabled: { kind: 'bool', valid: fc.boolean() },
  func_cold_transfer: { kind: 'bool', valid: fc.boolean() },
  transfer_type: { kind: 'string', valid: fc.constantFrom('cold', 'warm'), invalid: fc.constantFrom('hot', 'Cold', '', 'blind') },
  transfer_number: { kind: 'nullable-string', valid: fc.oneof(cleared, e164), invalid: fc.constantFrom('4155550123', '+0123456789', '+1 415 555 0123', 'abc'), code: 'invalid_phone_format' },
  voice_speed: { kind: 'number', valid: finite },
  speaking_rate: { kind: 'nullable-number', valid: fc.oneof(fc.constant(null), inRange(-10, 10), fc.constantFrom(0.5, 1, 1.5)) },
  greet_by_name: { kind: 'bool', valid: fc.boolean() },
  fallback_message: { kind: 'string', valid: text(0, 60), invalid: tooLong(1000) },
  phone_number: { kind: 'nullable-string', valid: fc.oneof(cleared, e164), invalid: fc.constantFrom('555-0100', '+1', 'none'), code: 'invalid_phone_format' },
  voicemail_leave_enabled: { kind: 'bool', valid: fc.boolean() },
  voicemail_message: { kind: 'nullable-string', valid: fc.oneof(cleared, fc.constant('  '), text(1, 60)), invalid: tooLong(2000) },
  timezone: { kind: 'nullable-string', valid: fc.oneof(cleared, fc.constantFrom(...ZONES)), invalid: fc.constantFrom('Mars/Base', '+01:00', 'New York', 'GMT+25'), code: 'invalid_timezone' },
  extraction_fields: {
    kind: 'array',
    valid: extractionFields,
    invalid: fc.oneof(
      fc.array(extractionField(snake), { minLength: 21, maxLength: 24 }).map((fs) => fs.map((f, i) => ({ ...f, name: `f${i}` }))),
      fc.constantFrom([{ name: 'Bad Name', type: 'string', description: 'x' }], [{ name: 'n', type: 'date', description: 'x' }], [{ name: 'n', type: 'number', description: 'x', enum: ['a'] }]),
    ),
  },
};
const NAMES = Object.keys(FIELDS);
const NULLABLE_TEXT = new Set(NAMES.filter((n) => FIELDS[n]!.kind === 'nullable-string'));

function hasKind(v: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'string':
      return typeof v === 'string';
    case 'nullable-string':
      return v === null || typeof v === 'string';
    case 'number':
      return typeof v === 'number';
    case 'nullable-number':
      return v === null || typeof v === 'number';
    case 'int':
      return typeof v === 'number';
    case 'bool':
      return typeof v === 'boolean';
    case 'nullable-bool':
      return v === null || typeof v === 'boolean';
    case 'array':
      return Array.isArray(v);
  }
}

const anyJson = fc.oneof(
  fc.string({ maxLength: 5 }),
  fc.constantFrom('10', 'true', '0.5', 'null'),
  fc.integer({ min: -5, max: 2000 }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.stringMatching(/^[a-z]{1,4}$/), fc.integer(), { maxKeys: 2 }),
);

// ---- defects: each says which field it breaks and the code the API must answer ----

interface Defect {
  key: string;
  value: unknown;
  code: string;
  /** The fields the error may name. */
  fields: string[];
}

const fieldDefect = fc.constantFrom(...NAMES).chain((name) => {
  const f = FIELDS[name]!;
  const own = f.code ?? 'invalid_request';
  const wrongType = anyJson.filter((v) => !hasKind(v, f.kind)).map((value): Defect => ({ key: name, value, code: own, fields: [name] }));
  if (!f.invalid) return wrongType;
  const rule = f.invalid.map((value): Defect => ({ key: name, value, code: f.ruleCode ?? own, fields: [name] }));
  return fc.oneof(wrongType, rule);
});

const unknownDefect = (readOnlyIgnored: boolean) =>
  fc
    .tuple(readOnlyIgnored ? fc.stringMatching(/^x_[a-z]{1,10}$/) : fc.oneof(fc.stringMatching(/^x_[a-z]{1,10}$/), fc.constantFrom(...READ_ONLY)), anyJson)
    .map(([key, value]): Defect => ({ key, value, code: 'invalid_request', fields: [key] }));

/** Any value under a credential key, even with another defect in the same body: deprecated_field wins. */
const deprecatedDefects = fc
  .tuple(fc.subarray(DEPRECATED, { minLength: 1 }), fc.jsonValue({ maxDepth: 1 }), fc.option(fc.oneof(fieldDefect, unknownDefect(true)), { nil: undefined }))
  .map(([keys, value, other]): Defect[] => [
    ...(other ? [other] : []),
    ...keys.map((key) => ({ key, value, code: 'deprecated_field', fields: keys })),
  ]);

const defects = (readOnlyIgnored: boolean): fc.Arbitrary<Defect[]> =>
  fc.oneof(
    { arbitrary: fc.constant<Defect[]>([]), weight: 6 },
    { arbitrary: fieldDefect.map((d) => [d]), weight: 4 },
    { arbitrary: unknownDefect(readOnlyIgnored).map((d) => [d]), weight: 1 },
    { arbitrary: deprecatedDefects, weight: 1 },
  );

const validBody = fc.record(Object.fromEntries(NAMES.map((n) => [n, FIELDS[n]!.valid])), { requiredKeys: [] }) as fc.Arbitrary<Record<string, unknown>>;

const withDefects = (readOnlyIgnored: boolean) =>
  fc.tuple(validBody, defects(readOnlyIgnored)).map(([body, ds]) => {
    const out = { ...body };
    for (const d of ds) out[d.key] = d.value;
    return { body: out, defects: ds };
  });

// ---- the model ----

type Outcome = { ok: true; settings: Record<string, unknown> } | { ok: false; code: string; fields: string[] };

/** What the API should store for an accepted body: JSON's own view of the value, then the two documented changes. */
function normalize(body: Record<string, unknown>): Record<string, unknown> {
  const out = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
  for (const [k, v] of Object.entries(out)) {
    if (NULLABLE_TEXT.has(k) && v === '') out[k] = null;
    if (k === 'speaking_rate' && typeof v === 'number') out[k] = Math.min(1.5, Math.max(0.5, v));
  }
  return out;
}

function predict(current: Record<string, unknown>, body: Record<string, unknown>, ds: Defect[], readOnlyIgnored: boolean): Outcome {
  const deprecated = ds.find((d) => d.code === 'deprecated_field');
  if (deprecated) return { ok: false, code: deprecated.code, fields: deprecated.fields };
  if (ds.length > 0) return { ok: false, code: ds[0]!.code, fields: ds[0]!.fields };
  const patch = normalize(body);
  if (readOnlyIgnored) for (const k of READ_ONLY) delete patch[k];
  const next = { ...current, ...patch };
  if (next['voicemail_leave_enabled'] === true && String(next['voicemail_message'] ?? '').trim() === '') {
    return { ok: false, code: 'voicemail_message_required', fields: ['voicemail_message'] };
  }
  return { ok: true, settings: next };
}

function expectOutcome(res: TestResponse, want: Outcome, okStatus: number): void {
  if (want.ok) {
    expect(res.status, res.text).toBe(okStatus);
    expect(strip(res.body)).toEqual(want.settings);
  } else {
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.type).toBe('invalid_request');
    expect(res.body.error.code, res.text).toBe(want.code);
    // The error names the defective field, or a path inside it (`extraction_fields.0.name`).
    const named = String(res.body.error.details?.field);
    expect(want.fields.some((f) => named === f || named.startsWith(`${f}.`)), `${named} not in ${want.fields.join(', ')}: ${res.text}`).toBe(true);
    expect(res.body.error.message.length).toBeGreaterThan(0);
  }
}

it('create then update: accepted values round-trip, rejected bodies change nothing', async () => {
  await fc.assert(
    fc.asyncProperty(withDefects(false), withDefects(true), fc.constantFrom('PATCH', 'PUT'), async (create, update, method) => {
      const { key } = await server.newAccount();
      const listAll = async () => (await server.request('GET', '/v1/agents?limit=100', { key })).body;

      const wantCreate = predict(defaults, create.body, create.defects, false);
      const res = await server.request('POST', '/v1/agents', { key, body: create.body });
      expectOutcome(res, wantCreate, 201);
      if (!wantCreate.ok) {
        expect(await listAll()).toEqual({ agents: [], count: 0, limit: 100, offset: 0 });
        return;
      }
      const agent = res.body;
      expect((await server.request('GET', `/v1/agents/${agent.agent_id}`, { key })).body).toEqual(agent);

      const before = await listAll();
      const wantUpdate = predict(wantCreate.settings, update.body, update.defects, true);
      const upd = await server.request(method, `/v1/agents/${agent.agent_id}`, { key, body: update.body });
      expectOutcome(upd, wantUpdate, 200);
      const after = (await server.request('GET', `/v1/agents/${agent.agent_id}`, { key })).body;
      if (wantUpdate.ok) {
        expect(after).toEqual(upd.body);
        expect({ id: after.id, agent_id: after.agent_id, api_key_id: after.api_key_id, created_at: after.created_at }).toEqual({
          id: agent.id,
          agent_id: agent.agent_id,
          api_key_id: agent.api_key_id,
          created_at: agent.created_at,
        });
      } else {
        expect(after).toEqual(agent);
      }
      const listed = await listAll();
      expect(listed.count).toBe(1);
      if (!wantUpdate.ok) expect(listed).toEqual(before);
    }),
    { numRuns: 60 },
  );
});
