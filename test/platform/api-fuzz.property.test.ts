// A fuzz test of the whole HTTP surface (issue 11, acceptance point 2). It starts the
// real service (a real SQLite file in a temp folder, real uWS on loopback, both carrier
// simulators), reads the served OpenAPI document, and for EVERY operation in it, carrier
// webhooks and public routes included, sends generated requests:
// - paths: the operation's template filled with real ids of a fuzzing account (and of a
//   stranger account), random text and odd literals, then sometimes mutated (empty, dot
//   and encoded-dot segments, encoded slashes and backslashes, trailing slashes, unicode,
//   over-long segments, case, an extra or missing segment);
// - the operation's own method mostly, other methods sometimes;
// - headers: a valid key, another key of the account, a stranger's key, none, or garbage
//   in Authorization; odd content types; Idempotency-Key edge values and reused keys;
// - query strings: the documented parameters with good and bad values (booleans that are
//   not booleans, numbers that are not numbers), repeats, prototype keys;
// - bodies derived from the operation's request schema, as they are or mutated: wrong
//   types, null, arrays for objects, prototype keys (`__proto__`, `constructor`, …, as
//   keys and as names in a custom function's `required`), nesting thousands of levels
//   deep, strings of megabytes (under and over the 5 MiB limit), `{name}` templates
//   expanded by huge variables, invalid JSON and invalid UTF-8; carrier webhooks get
//   form or event bodies, validly signed or not, some for a call the carrier simulator
//   has just put through (so they reach a live call).
// Every answer must be: not 5xx, unless it is a 502 provider error the operation
// documents; a 4xx is the envelope {error:{type, code, message}} whose code the document
// lists for the operation under that status (a path that is not canonical is 400
// invalid_path; no route is route_not_found; a wrong method is method_not_allowed with the
// document's methods in Allow); a 4xx changes nothing in the database (read through a
// read-only connection to the server's file; the idempotency table, which keeps 4xx
// answers for replay, and api_keys.last_used_at, touched by authentication, are left out;
// call tables may move on by themselves, but no call row may appear or vanish); and no
// request makes the server drop an event its own carrier parser produced.
//
// Bounded: FUZZ_RUNS runs per operation (default 24; twice that for operations with a
// body and for carrier webhooks), one request per run: about 2,000 requests, 10-20 s.
// fast-check prints the seed and path of a failure; replay it with FUZZ_SEED=<seed> (one
// operation: vitest -t "<METHOD> <path>"). FUZZ_STATS=1 prints what each operation
// answered; FUZZ_STRICT=1 also fails on the reported gaps the suite tolerates.
import http from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { createAgent, importTwilioNumber, nextNumber } from '../helpers/fixtures.ts';
import { PUBLIC_BASE, startSims } from '../helpers/calls.ts';
import { twilioSid } from '../sim/twilio-sim.ts';
import { signTwilio } from '../../voice/carriers/twilio-signature.ts';
import { signTelnyx } from '../../voice/carriers/telnyx-signature.ts';
import { encodeClientState } from '../../voice/carriers/telnyx-voice.ts';

const RUNS_PER_OPERATION = Number(process.env['FUZZ_RUNS'] ?? 24);
const SEED = process.env['FUZZ_SEED'] === undefined ? undefined : Number(process.env['FUZZ_SEED']);
const PRINT_STATS = process.env['FUZZ_STATS'] === '1';
/** Holds the suite to the document where it knowingly tolerates reported gaps (see reportedGap). */
const STRICT = process.env['FUZZ_STRICT'] === '1';
const MiB = 1024 * 1024;
const MAX_BODY_BYTES = 5 * MiB;

type JsonSchema = { [keyword: string]: any };

// ---------------------------------------------------------------------------------
// The stack: simulators, server, the served document, a read-only view of the database.

/**
 * The server's warnings and errors, since the last request was sent: a request must not
 * make the server drop an event its own carrier parser produced (a parser bug, whatever
 * the answer), and an unhandled error's log line explains a 500.
 */
let serverLog: Array<{ level: number; msg: string; line: string }> = [];
const serverLogger = pino(
  { level: 'warn' },
  {
    write(line: string) {
      const { level, msg } = JSON.parse(line) as { level: number; msg: string };
      serverLog.push({ level, msg, line });
    },
  },
);
const DROPPED_EVENT = 'dropped an event that does not parse';

const sims = await startSims(10);
const server: TestServer = await startTestServer(
  {
    ...sims.env,
    // Target URLs are not resolved (no DNS in tests); everything else is the default.
    ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
    // The fuzz is one client sending thousands of requests; limits have their own suite.
    RATE_LIMIT_READS_PER_MIN: '100000000',
    RATE_LIMIT_WRITES_PER_MIN: '100000000',
  },
  { log: serverLogger },
);
sims.twilio.route(PUBLIC_BASE, server.url);
sims.telnyx.redirect(PUBLIC_BASE, server.url);
const db = new Database(join(server.dataDir, 'switchboard.db'), { readonly: true, fileMustExist: true });
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });

afterAll(async () => {
  keepAlive.destroy();
  db.close();
  await server.close();
  await sims.close();
});

const docAnswer = await server.request('GET', '/v1/openapi.json');
if (docAnswer.status !== 200) throw new Error(`GET /v1/openapi.json answered ${docAnswer.status}`);
const doc = docAnswer.body as { paths: Record<string, Record<string, JsonSchema>>; components: { schemas: { ErrorCode: JsonSchema } } };
/** The registry the document publishes: each code's type and status. */
const registry = doc.components.schemas.ErrorCode['x-error-registry'] as Record<string, { type: string; status: number }>;

// ---------------------------------------------------------------------------------
// Operations, as the document describes them.

interface Operation {
  id: string;
  method: string;
  path: string;
  pathParams: string[];
  queryParams: Array<{ name: string; schema: JsonSchema }>;
  body: JsonSchema | null;
  carrier: 'twilio' | 'telnyx' | null;
  /** Every status the document lists. */
  statuses: Set<number>;
  /** Error codes by status, from each error response's `code` enum. */
  codes: Map<number, Set<string>>;
}

const operations: Operation[] = [];
for (const [path, byMethod] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(byMethod)) {
    const codes = new Map<number, Set<string>>();
    for (const [status, response] of Object.entries(op['responses'] as Record<string, JsonSchema>)) {
      const allOf = response['content']?.['application/json']?.['schema']?.['allOf'] as JsonSchema[] | undefined;
      const list = allOf?.[1]?.['properties']?.['error']?.['properties']?.['code']?.['enum'] as string[] | undefined;
      if (list) codes.set(Number(status), new Set(list));
    }
    const params = (op['parameters'] ?? []) as JsonSchema[];
    operations.push({
      id: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      path,
      pathParams: params.filter((p) => p['in'] === 'path').map((p) => p['name'] as string),
      queryParams: params.filter((p) => p['in'] === 'query').map((p) => ({ name: p['name'] as string, schema: p['schema'] as JsonSchema })),
      body: (op['requestBody']?.['content']?.['application/json']?.['schema'] as JsonSchema | undefined) ?? null,
      carrier: path.startsWith('/carrier/twilio/') ? 'twilio' : path.startsWith('/carrier/telnyx/') ? 'telnyx' : null,
      statuses: new Set(Object.keys(op['responses'] as object).map(Number)),
      codes,
    });
  }
}

// ---------------------------------------------------------------------------------
// Which operation a request reaches, decided independently of the server from the
// document and the rules the invalid_path message states.

/** The canonical form of a path, or null when it has an empty, "." or ".." or encoded-slash segment. */
function canonicalForm(raw: string): string | null {
  if (!raw.startsWith('/')) return null;
  const path = raw.length > 1 && raw.endsWith('/') ? raw.slice(0, -1) : raw;
  if (path === '/') return path;
  for (const segment of path.split('/').slice(1)) {
    if (segment === '') return null;
    let decoded = segment;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      // not an escape: it stays as it is
    }
    if (decoded === '.' || decoded === '..' || decoded.includes('/') || decoded.includes('\\')) return null;
  }
  return path;
}

interface TemplateNode {
  statics: Map<string, TemplateNode>;
  param: TemplateNode | null;
  template: string | null;
}
const newNode = (): TemplateNode => ({ statics: new Map(), param: null, template: null });
const templates = newNode();
const methodsByTemplate = new Map<string, Map<string, Operation>>();
for (const op of operations) {
  let node = templates;
  for (const segment of op.path.split('/').filter((s) => s !== '')) {
    if (/^\{\w+\}$/.test(segment)) node = node.param ??= newNode();
    else {
      let next = node.statics.get(segment);
      if (!next) node.statics.set(segment, (next = newNode()));
      node = next;
    }
  }
  node.template = op.path;
  const byMethod = methodsByTemplate.get(op.path) ?? new Map<string, Operation>();
  byMethod.set(op.method, op);
  methodsByTemplate.set(op.path, byMethod);
}

/** The template a canonical path matches: literal segments before parameters, backtracking. */
function matchTemplate(segments: string[]): string | null {
  const walk = (node: TemplateNode, i: number): string | null => {
    if (i === segments.length) return node.template;
    const literal = node.statics.get(segments[i]!);
    const viaLiteral = literal ? walk(literal, i + 1) : null;
    if (viaLiteral !== null) return viaLiteral;
    return node.param ? walk(node.param, i + 1) : null;
  };
  return walk(templates, 0);
}

type Resolution =
  | { kind: 'invalid_path' }
  | { kind: 'no_route'; v1: boolean }
  | { kind: 'wrong_method'; v1: boolean; allowed: string[] }
  | { kind: 'operation'; op: Operation };

function resolve(method: string, rawPath: string): Resolution {
  const path = canonicalForm(rawPath);
  if (path === null) return { kind: 'invalid_path' };
  const v1 = path === '/v1' || path.startsWith('/v1/');
  const template = matchTemplate(path.split('/').filter((s) => s !== ''));
  if (template === null) return { kind: 'no_route', v1 };
  const byMethod = methodsByTemplate.get(template)!;
  const m = method.toUpperCase();
  const op = byMethod.get(m) ?? (m === 'HEAD' ? byMethod.get('GET') : undefined);
  return op ? { kind: 'operation', op } : { kind: 'wrong_method', v1, allowed: [...byMethod.keys()] };
}

// ---------------------------------------------------------------------------------
// The fuzzing account and its neighbours. Requests name them symbolically (⟦agentId⟧),
// resolved when sent, so a request stays meaningful after the world was rebuilt (a fuzzed
// DELETE may well remove the agent, or the account).

interface World {
  accountId: string;
  key: string;
  keyId: string;
  key2: string;
  key2Id: string;
  foreignKey: string;
  foreignKeyId: string;
  agentId: string;
  inactiveAgentId: string;
  foreignAgentId: string;
  twilioNumber: string;
  twilioAccountSid: string;
  twilioAuthToken: string;
  telnyxNumber: string;
  telnyxApiKey: string;
  telnyxConnectionId: string;
  telnyxPublicKey: string;
  telnyxToken: string;
  foreignNumber: string;
  functionId: string;
  callerNumber: string;
}

/** Every number this suite may dial answers busy, so calls end at once and hold nothing. */
function quiet(number: string): string {
  sims.twilio.scenario(number, 'busy');
  sims.telnyx.setScenario(number, 'busy');
  return number;
}
const busyTo = quiet(nextNumber());
const rejectTo = nextNumber();
sims.twilio.scenario(rejectTo, 'reject');
sims.telnyx.setScenario(rejectTo, 'reject');
const unimportedNumber = quiet(nextNumber());

async function created(what: string, res: Promise<{ status: number; text: string; body: any }>): Promise<any> {
  const r = await res;
  if (r.status !== 201 && r.status !== 200) throw new Error(`${what} failed: ${r.status} ${r.text}`);
  return r.body;
}

async function buildWorld(): Promise<World> {
  const owner = await server.newAccount();
  const second = await created('second key', server.request('POST', '/v1/keys', { key: owner.key, body: { name: 'fuzz second key' } }));
  const stranger = await server.newAccount();
  const agentId = await createAgent(server, owner.key, { name: 'Fuzz agent' });
  const inactiveAgentId = await createAgent(server, owner.key, { name: 'Fuzz inactive agent', is_active: false });
  const foreignAgentId = await createAgent(server, stranger.key, { name: 'Stranger agent' });

  const twilioAccountSid = twilioSid('AC');
  const twilioAuthToken = twilioSid('').slice(0, 32);
  sims.twilio.addAccount(twilioAccountSid, twilioAuthToken);
  const twilioNumber = quiet(nextNumber());
  sims.twilio.addNumber(twilioAccountSid, twilioNumber);
  await created(
    'carrier A import',
    server.request('POST', '/v1/phone-numbers', {
      key: owner.key,
      body: { phone_number: twilioNumber, agent_id: agentId, provider: 'twilio', twilio_account_sid: twilioAccountSid, twilio_auth_token: twilioAuthToken },
    }),
  );

  const telnyxApiKey = `KEY${twilioSid('').slice(0, 32).toUpperCase()}`;
  sims.telnyx.addApiKey(telnyxApiKey);
  const telnyxConnectionId = sims.telnyx.addConnection(telnyxApiKey);
  const telnyxNumber = quiet(nextNumber());
  sims.telnyx.addNumber(telnyxApiKey, telnyxNumber);
  const telnyxPublicKey = sims.telnyx.publicKeyOf(telnyxApiKey);
  await created(
    'carrier B import',
    server.request('POST', '/v1/phone-numbers', {
      key: owner.key,
      body: {
        phone_number: telnyxNumber,
        agent_id: agentId,
        provider: 'telnyx',
        telnyx_api_key: telnyxApiKey,
        telnyx_connection_id: telnyxConnectionId,
        telnyx_public_key: telnyxPublicKey,
      },
    }),
  );
  const foreignNumber = quiet(await importTwilioNumber(server, sims, stranger.key, foreignAgentId));

  const fnPath = `/v1/integrations/custom-functions/number/${encodeURIComponent(twilioNumber)}`;
  const fn = await created(
    'custom function',
    server.request('POST', fnPath, {
      key: owner.key,
      body: { name: 'lookup_order', url: 'https://hooks.example.com/fn', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } },
    }),
  );
  const callerNumber = quiet(nextNumber());
  await created(
    'caller record',
    server.request('PUT', `/v1/phone-numbers/${encodeURIComponent(twilioNumber)}/callers/${encodeURIComponent(callerNumber)}`, { key: owner.key, body: { name: 'Ada' } }),
  );
  await created(
    'webhook',
    server.request('PUT', `/v1/integrations/webhook/number/${encodeURIComponent(twilioNumber)}`, { key: owner.key, body: { url: 'https://hooks.example.com/wh' } }),
  );
  // One call on record (it ends busy at once), so call routes have a real id to work on.
  await created(
    'outbound call',
    server.request('POST', '/v1/calls/outbound', { key: owner.key, body: { agent_id: agentId, to_number: busyTo, prompt: 'Confirm the appointment.' } }),
  );
  const token = db.prepare('SELECT events_token FROM phone_numbers WHERE phone_number = ?').get(telnyxNumber) as { events_token: string };
  return {
    accountId: owner.accountId,
    key: owner.key,
    keyId: owner.keyId,
    key2: `${second.key_id}:${second.key_secret}`,
    key2Id: second.key_id,
    foreignKey: stranger.key,
    foreignKeyId: stranger.keyId,
    agentId,
    inactiveAgentId,
    foreignAgentId,
    twilioNumber,
    twilioAccountSid,
    twilioAuthToken,
    telnyxNumber,
    telnyxApiKey,
    telnyxConnectionId,
    telnyxPublicKey,
    telnyxToken: token.events_token,
    foreignNumber,
    functionId: fn.function.id,
    callerNumber,
  };
}

const count = (sql: string, ...args: string[]): number => (db.prepare(sql).get(...args) as { n: number }).n;

/** What a fuzzed request may have destroyed (with a 2xx, legitimately): rebuilt when gone. */
function worldIntact(w: World): boolean {
  return (
    count('SELECT COUNT(*) AS n FROM api_keys WHERE id IN (?, ?, ?) AND revoked_at IS NULL', w.keyId, w.key2Id, w.foreignKeyId) === 3 &&
    count('SELECT COUNT(*) AS n FROM agents WHERE agent_id IN (?, ?, ?)', w.agentId, w.inactiveAgentId, w.foreignAgentId) === 3 &&
    count('SELECT COUNT(*) AS n FROM phone_numbers WHERE phone_number IN (?, ?, ?)', w.twilioNumber, w.telnyxNumber, w.foreignNumber) === 3 &&
    count('SELECT COUNT(*) AS n FROM custom_functions WHERE id = ?', w.functionId) === 1 &&
    count('SELECT COUNT(*) AS n FROM callers WHERE phone_number = ? AND caller_number = ?', w.twilioNumber, w.callerNumber) === 1
  );
}

let world!: World;
let rebuilds = 0;
beforeAll(async () => {
  world = await buildWorld();
}, 60_000);
async function ensureWorld(): Promise<void> {
  if (worldIntact(world)) return;
  world = await buildWorld();
  rebuilds++;
}

const latestCall = db.prepare('SELECT call_id, internal_id, carrier_call_id FROM calls WHERE account_id = ? ORDER BY created_at DESC LIMIT 1');

/** The value a ⟦name⟧ stands for, now. */
function refValue(name: string): string {
  if (Object.hasOwn(world, name)) return world[name as keyof World];
  const call = latestCall.get(world.accountId) as { call_id: string; internal_id: string | null; carrier_call_id: string | null } | undefined;
  switch (name) {
    case 'busyTo':
      return busyTo;
    case 'rejectTo':
      return rejectTo;
    case 'unimportedNumber':
      return unimportedNumber;
    case 'callId':
      return call?.call_id ?? 'call_none0000000000000000000';
    case 'callInternalId':
      return call?.internal_id ?? 'call_none0000000000000000000';
    case 'callCarrierId':
      return call?.carrier_call_id ?? 'v3:none';
    case 'clientState':
      return encodeClientState(call?.internal_id ?? 'call_none');
    case 'liveCarrierCallId':
      return liveCall?.carrierCallId ?? 'v3:none';
    case 'liveClientState':
      return encodeClientState(liveCall?.internalId ?? 'call_none');
    default:
      throw new Error(`unknown reference ⟦${name}⟧`);
  }
}
const ref = (name: string): string => `⟦${name}⟧`;
const expandRefs = (text: string): string => text.replace(/⟦(\w+)⟧/g, (_, name: string) => refValue(name));

/**
 * A call in progress on the carrier B number: the simulator rings it (signed events to our
 * events URL), the service answers it. Carrier B events fuzzed right after may name it
 * (⟦liveCarrierCallId⟧, ⟦liveClientState⟧), so they reach a live call's actor.
 */
let liveCall: { carrierCallId: string; internalId: string; hangup(): Promise<void> } | null = null;
async function startLiveCall(): Promise<void> {
  const handle = await sims.telnyx.placeInboundCall({ from: busyTo, to: world.telnyxNumber, apiKey: world.telnyxApiKey });
  await handle.waitFor('answered', 5000);
  const row = db.prepare('SELECT internal_id FROM calls WHERE carrier_call_id = ?').get(handle.id) as { internal_id: string } | undefined;
  if (!row) throw new Error(`the simulator's call ${handle.id} left no call record`);
  liveCall = { carrierCallId: handle.id, internalId: row.internal_id, hangup: () => handle.hangup() };
}

// ---------------------------------------------------------------------------------
// Requests as data: printable and replayable (fast-check shows them on failure).

type ParamValue = { ref: string; plusUnencoded: boolean } | { text: string } | { raw: string };

type PathMutation =
  | { kind: 'emptySegment'; at: number }
  | { kind: 'dotSegment'; at: number; segment: string }
  | { kind: 'encodedSlash'; at: number; slash: string }
  | { kind: 'trailingSlash'; count: number }
  | { kind: 'unicode'; at: number; text: string }
  | { kind: 'longSegment'; at: number; length: number }
  | { kind: 'upperCase'; at: number }
  | { kind: 'encodeFirstChar'; at: number }
  | { kind: 'extraSegment'; segment: string }
  | { kind: 'dropLastSegment' };

interface QueryEntry {
  key: string;
  value: string;
  /** Sent exactly as written, not percent-encoded. */
  raw: boolean;
}

type ValueMutation =
  | { kind: 'replace'; pick: number; value: unknown }
  | { kind: 'addKeys'; pick: number; keys: string[]; value: unknown }
  | { kind: 'dropKey'; pick: number }
  | { kind: 'wrapInArray'; pick: number }
  /** The string→string map gets `a` = a string of `size` bytes, the texts `{a}` `repeat` times. */
  | { kind: 'templateExpansion'; dictionary: string; texts: string[]; repeat: number; size: number };

type Corruption =
  | { kind: 'truncate'; at: number }
  | { kind: 'insertBytes'; at: number; hex: string }
  | { kind: 'append'; text: string }
  | { kind: 'prepend'; text: string }
  | { kind: 'singleQuotes' }
  | { kind: 'replaceWith'; text: string };

type BodySpec =
  | { kind: 'json'; value: unknown }
  | { kind: 'corrupted'; value: unknown; corruption: Corruption }
  | { kind: 'twilioForm'; fields: Array<[string, string]>; signature: 'valid' | 'none' | 'garbage' }
  | { kind: 'telnyxEvent'; event: BodySpec; signature: 'valid' | 'none' | 'garbage' | 'stale'; duringLiveCall: boolean };

interface FuzzRequest {
  method: string;
  params: Record<string, ParamValue>;
  mutation: PathMutation | null;
  query: QueryEntry[];
  authorization: string | null;
  contentType: string | null;
  idempotencyKey: string | null;
  body: BodySpec | null;
  chunked: boolean;
}

// ---------------------------------------------------------------------------------
// Generators.

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

/** An object with exactly these own keys, `__proto__` included as a plain key. */
function objectFrom(entries: Array<[string, unknown]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  return out;
}
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
function clone(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clone);
  if (isPlainObject(v)) return objectFrom(Object.keys(v).map((k) => [k, clone(v[k])]));
  return v;
}

/** Path parameters: real ids by the parameter's name, else random text or odd literals. */
const PARAM_REFS: Record<string, string[]> = {
  key_id: ['keyId', 'key2Id', 'foreignKeyId'],
  agent_id: ['agentId', 'agentId', 'inactiveAgentId', 'foreignAgentId'],
  phone_number: ['twilioNumber', 'twilioNumber', 'telnyxNumber', 'foreignNumber', 'unimportedNumber'],
  caller_number: ['callerNumber', 'busyTo'],
  function_id: ['functionId'],
  call_id: ['callId', 'callInternalId'],
  token: ['telnyxToken'],
};
const ODD_SEGMENTS = [
  '%', '%zz', '%00', '%C0%AF', '%E0%A4%A', 'null', 'undefined', '__proto__', 'constructor', 'toString', 'hasOwnProperty',
  '0', '-1', '+14155550123', '14155550123', '%2B14155550123', '%252F', '*', '{agent_id}', ';', ',', '~', '$', "'", '"', '<script>', 'a'.repeat(300),
];
const paramValueArb = (name: string): fc.Arbitrary<ParamValue> =>
  fc.oneof(
    { weight: 10, arbitrary: fc.record({ ref: fc.constantFrom(...(PARAM_REFS[name] ?? ['agentId'])), plusUnencoded: fc.boolean() }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }).map((text) => ({ text })) },
    { weight: 2, arbitrary: fc.constantFrom(...ODD_SEGMENTS).map((raw) => ({ raw })) },
  );

/**
 * Over-long segments keep the request head under 4 KiB: the pinned uWS drops, without an
 * answer, a head past about 4 KiB that reaches it in more than one read (on loopback only
 * when a loaded machine splits it, behind a packet's size on a real network), and resets a
 * kept-alive connection past 64 KiB (both in the README's limitations; FUZZ_STRICT=1 sends
 * longer ones anyway).
 */
const LONG_SEGMENTS = STRICT ? [256, 2048, 4096, 16_384, 60_000, 65_536, 131_072] : [256, 1024, 2048];
const pathMutationArb: fc.Arbitrary<PathMutation> = fc.oneof(
  fc.record({ kind: fc.constant('emptySegment' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('dotSegment' as const), at: fc.nat(), segment: fc.constantFrom('.', '..', '%2e', '%2E', '%2e%2e', '.%2e', '%2E.', '%2E%2E') }),
  fc.record({ kind: fc.constant('encodedSlash' as const), at: fc.nat(), slash: fc.constantFrom('%2F', '%2f', '%5C', '%5c', '\\') }),
  fc.record({ kind: fc.constant('trailingSlash' as const), count: fc.integer({ min: 1, max: 2 }) }),
  fc.record({ kind: fc.constant('unicode' as const), at: fc.nat(), text: fc.constantFrom('😀', 'é', '\u0000', '\u202e', '\ufeff', '\u2028', 'ñ', '中文') }),
  fc.record({ kind: fc.constant('longSegment' as const), at: fc.nat(), length: fc.constantFrom(...LONG_SEGMENTS) }),
  fc.record({ kind: fc.constant('upperCase' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('encodeFirstChar' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('extraSegment' as const), segment: fc.constantFrom('x', 'import', 'rotate', 'callers', 'outbound', 'secret', '%2e%2e') }),
  fc.constant({ kind: 'dropLastSegment' as const }),
);

/** Query values for a documented parameter, by its schema: good ones and near misses. */
const BOOLEAN_TEXTS = ['true', 'false', 'TRUE', 'True', '1', '0', 'yes', '', 'null', 'true,false', ' true'];
const INTEGER_TEXTS = ['0', '1', '25', '100', '101', '-1', '1.5', '1e3', '0x10', ' 5', '99999999999999999999', '9007199254740993', 'NaN', 'Infinity', ''];
const DATE_TEXTS = ['2024-01-01', '2024-01-01T00:00:00Z', 'not a date', '0', '-271821-04-20T00:00:00Z', '+275760-09-13T00:00:00.000Z', '2024-02-30', ''];
const QUERY_STRING_REFS: Record<string, string[]> = {
  agent_id: [ref('agentId'), ref('foreignAgentId'), 'agent_none'],
  phone_number: [ref('twilioNumber'), ref('foreignNumber'), '+1'],
  confirm: ['true', 'TRUE', 'yes', '', 'false'],
  cid: [ref('callInternalId'), 'call_none', '', '__proto__'],
};
function queryValueArb(name: string, schema: JsonSchema): fc.Arbitrary<string> {
  const pool =
    schema['type'] === 'boolean'
      ? BOOLEAN_TEXTS
      : schema['type'] === 'integer'
        ? INTEGER_TEXTS
        : schema['format'] === 'date-time'
          ? DATE_TEXTS
          : Array.isArray(schema['enum'])
            ? [...(schema['enum'] as string[]), '', 'x', String(schema['enum'][0]).toUpperCase()]
            : (QUERY_STRING_REFS[name] ?? ['x', '']);
  return fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...pool) }, { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 16 }) });
}
const RAW_QUERY_NOISE = ['%zz', '%', '&&', '==', 'a[]', 'a[b]', '%00', '+'];
const queryArb = (op: Operation): fc.Arbitrary<QueryEntry[]> => {
  const documented = op.queryParams.map((p) =>
    queryValueArb(p.name, p.schema).map((value): QueryEntry => ({ key: p.name, value, raw: false })),
  );
  const entry = fc.oneof(
    ...documented.map((arbitrary) => ({ weight: 4, arbitrary })),
    { weight: 1, arbitrary: fc.record({ key: fc.constantFrom(...PROTO_KEYS), value: fc.constantFrom('x', '', 'true', '1'), raw: fc.constant(false) }) },
    { weight: 1, arbitrary: fc.record({ key: fc.constantFrom(...RAW_QUERY_NOISE), value: fc.constantFrom(...RAW_QUERY_NOISE, ''), raw: fc.constant(true) }) },
    { weight: 1, arbitrary: fc.record({ key: fc.string({ unit: 'grapheme', maxLength: 8 }), value: fc.string({ unit: 'grapheme', maxLength: 8 }), raw: fc.constant(false) }) },
  );
  return fc.array(entry, { maxLength: documented.length > 0 ? 6 : 2 });
};

const GARBAGE_AUTHORIZATION = [
  `Bearer ${ref('keyId')}`,
  `Bearer ${ref('keyId')}:`,
  `Bearer ${ref('keyId')}:sk_${'A'.repeat(61)}`,
  `bearer ${ref('key')}`,
  `Bearer ${ref('key')}x`,
  `Bearer ${ref('key')}:extra`,
  `Bearer ${ref('key')}, Bearer ${ref('key2')}`,
  `Token ${ref('key')}`,
  'Basic dXNlcjpwYXNz',
  'Bearer',
  'Bearer ',
  'Bearer :',
  'Bearer key_:sk_',
  `Bearer ${'x'.repeat(3000)}`,
  'Bearer \u00e9\u00e9',
];
const authorizationArb: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 24, arbitrary: fc.constant(`Bearer ${ref('key')}`) },
  { weight: 2, arbitrary: fc.constant(`Bearer ${ref('key2')}`) },
  { weight: 2, arbitrary: fc.constant(`Bearer ${ref('foreignKey')}`) },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.constantFrom(...GARBAGE_AUTHORIZATION) },
);

const contentTypeArb: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 20, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'application/vnd.api+json',
      'application/problem+json; charset=latin1',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      'json',
      '',
    ),
  },
  { weight: 1, arbitrary: fc.constant(null) },
);

const idempotencyKeyArb: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 16, arbitrary: fc.constant(null) },
  { weight: 3, arbitrary: fc.constantFrom('fuzz-1', 'fuzz-2', 'fuzz-3') },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'x'.repeat(255), 'x'.repeat(256), '\u00e9', ref('keyId'), '__proto__') },
);

// Bodies derived from a JSON Schema of the document, in two modes: `conformant` values
// the schema (and, as far as the field's name tells, the service) accepts, so requests
// reach the handlers' own checks and writes; `any` values that are merely of the type.
// Field names pick realistic values: real ids of the world first, near misses after.
type Mode = 'conformant' | 'any';
interface Hint {
  good: string[];
  bad: string[];
}
const HINTS: Array<[RegExp, Hint]> = [
  [/^agent_id$/, { good: [ref('agentId')], bad: [ref('inactiveAgentId'), ref('foreignAgentId'), 'agent_none0000000000000000'] }],
  [/^from_number$/, { good: [ref('twilioNumber')], bad: [ref('telnyxNumber'), ref('foreignNumber'), '+1'] }],
  [/^(to_number|caller_number)$/, { good: [ref('busyTo'), ref('busyTo'), ref('rejectTo'), ref('callerNumber')], bad: ['14155550123', '+1 415 555 0123', '+0123'] }],
  [/^phone_number$/, { good: [ref('twilioNumber'), ref('unimportedNumber')], bad: [ref('telnyxNumber'), ref('foreignNumber'), '+1'] }],
  [/^provider$/, { good: ['twilio'], bad: ['telnyx', 'sip'] }],
  [/^twilio_account_sid$/, { good: [ref('twilioAccountSid')], bad: [`AC${'0'.repeat(32)}`, 'AC123'] }],
  [/^twilio_auth_token$/, { good: [ref('twilioAuthToken')], bad: ['f'.repeat(32)] }],
  [/^telnyx_api_key$/, { good: [ref('telnyxApiKey')], bad: ['KEYUNKNOWN'] }],
  [/^telnyx_connection_id$/, { good: [ref('telnyxConnectionId')], bad: ['1234'] }],
  [/^telnyx_public_key$/, { good: [ref('telnyxPublicKey')], bad: ['AAAA'] }],
  [/url$/, { good: ['https://hooks.example.com/fuzz', 'https://hooks.example.com/fuzz?a=1'], bad: ['http://hooks.example.com/x', 'https://user:pw@hooks.example.com/', 'javascript:alert(1)', 'https://hooks.example.com/a b', 'not a url'] }],
  [/email/, { good: ['ada@example.com'], bad: ['not-an-email'] }],
  [/timezone/, { good: ['America/New_York'], bad: ['Mars/Olympus', '+01:00'] }],
  [/prompt|message|description|greeting/, { good: ['Confirm the appointment.', 'Ask {name} about order {a}.', '⟦template:5000⟧'], bad: ['{__proto__}{constructor}{toString}', ' '] }],
  [/^name$/, { good: ['lookup_order', 'fuzz_agent'], bad: ['toString', '__proto__', 'constructor', 'Fuzz Agent'] }],
];
const hintFor = (field: string): Hint | undefined => HINTS.find(([re]) => re.test(field))?.[1];

function stringArb(schema: JsonSchema, field: string, mode: Mode): fc.Arbitrary<string> {
  const hint = hintFor(field);
  const min = Math.max(1, (schema['minLength'] as number | undefined) ?? 1);
  const max = (schema['maxLength'] as number | undefined) ?? 64;
  const pattern = typeof schema['pattern'] === 'string' ? fc.stringMatching(new RegExp(schema['pattern'] as string)).map((s) => s.slice(0, max)) : null;
  if (mode === 'conformant') {
    if (hint) return fc.constantFrom(...hint.good);
    if (pattern) return pattern;
    return fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 30) }).filter((s) => s.trim() !== '' && s.length <= max);
  }
  const options: Array<fc.WeightedArbitrary<string>> = [];
  if (hint) options.push({ weight: 10, arbitrary: fc.constantFrom(...hint.good, ...hint.bad) });
  if (pattern) options.push({ weight: 4, arbitrary: pattern });
  options.push({ weight: hint ? 1 : 6, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) });
  if (schema['maxLength'] !== undefined) options.push({ weight: 1, arbitrary: fc.constantFrom(max, max + 1).map((n) => 'y'.repeat(n)) });
  return fc.oneof(...options);
}

function numberArb(schema: JsonSchema, mode: Mode): fc.Arbitrary<number> {
  const lo = (schema['minimum'] as number | undefined) ?? -1000;
  const hi = (schema['maximum'] as number | undefined) ?? 1000;
  const inRange = schema['type'] === 'integer' ? fc.integer({ min: Math.ceil(lo), max: Math.floor(hi) }) : fc.double({ min: lo, max: hi, noNaN: true });
  if (mode === 'conformant') return inRange;
  return fc.oneof({ weight: 8, arbitrary: inRange }, { weight: 1, arbitrary: fc.constantFrom(lo - 1, hi + 1, 0.5, 1e308, -1e308, 2 ** 53 + 2) });
}

const DICTIONARY_KEYS = ['a', 'name', 'order_id', '', ...PROTO_KEYS];
const PARAMETER_NAMES = ['order_id', ...PROTO_KEYS];
/** A custom function's `parameters`: a JSON Schema whose names include prototype keys. */
const functionParametersArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 6,
    arbitrary: fc.record(
      {
        type: fc.constantFrom('object', 'object', 'object', 'string', 'toString'),
        properties: fc.uniqueArray(fc.constantFrom(...PARAMETER_NAMES), { maxLength: 4 }).map((names) => objectFrom(names.map((n) => [n, { type: 'string' }]))),
        required: fc.array(fc.constantFrom(...PARAMETER_NAMES), { maxLength: 3 }),
      },
      { requiredKeys: ['type'] },
    ),
  },
);

const ABSENT = Symbol('absent');

function objectArb(schema: JsonSchema, mode: Mode, depth: number): fc.Arbitrary<unknown> {
  const properties = Object.entries((schema['properties'] ?? {}) as Record<string, JsonSchema>);
  const extra = schema['additionalProperties'];
  if (properties.length === 0) {
    if (!extra) return fc.constant({});
    const value = isPlainObject(extra) && Object.keys(extra).length > 0 ? valueArb(extra, 'value', mode, depth + 1) : fc.jsonValue({ maxDepth: 2 });
    const keys = mode === 'conformant' ? fc.constantFrom('a', 'name') : fc.constantFrom(...DICTIONARY_KEYS);
    return fc.array(fc.tuple(keys, value), { maxLength: 3 }).map(objectFrom);
  }
  const required = new Set((schema['required'] ?? []) as string[]);
  const fields = properties.map(([name, sub]) => {
    const value = valueArb(sub, name, mode, depth + 1);
    const presence = required.has(name)
      ? mode === 'conformant'
        ? value
        : fc.oneof({ weight: 14, arbitrary: value }, { weight: 1, arbitrary: fc.constant(ABSENT) })
      : fc.oneof({ weight: 3, arbitrary: fc.constant(ABSENT) }, { weight: 1, arbitrary: value });
    return presence.map((v): [string, unknown] => [name, v]);
  });
  return fc.tuple(...fields).map((pairs) => objectFrom(pairs.filter(([, v]) => v !== ABSENT)));
}

/** The smallest value the schema plausibly accepts, for arrays of exactly maxItems + 1. */
function exampleOf(schema: JsonSchema, field: string): unknown {
  if (schema['anyOf']) return exampleOf((schema['anyOf'] as JsonSchema[])[0]!, field);
  if (Array.isArray(schema['enum'])) return schema['enum'][0];
  switch (schema['type']) {
    case 'object':
      return objectFrom(((schema['required'] ?? []) as string[]).map((k) => [k, exampleOf((schema['properties'] as Record<string, JsonSchema>)[k] ?? {}, k)]));
    case 'array':
      return [];
    case 'string':
      return /number/.test(field) ? '+14155550100' : 'x';
    case 'integer':
    case 'number':
      return (schema['minimum'] as number | undefined) ?? 0;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

function arrayArb(schema: JsonSchema, field: string, mode: Mode, depth: number): fc.Arbitrary<unknown> {
  const items = (schema['items'] ?? {}) as JsonSchema;
  const min = (schema['minItems'] as number | undefined) ?? 0;
  const max = schema['maxItems'] as number | undefined;
  const normal = fc.array(valueArb(items, field, mode, depth + 1), { minLength: min, maxLength: Math.max(min, Math.min(max ?? 3, 3)) });
  if (max === undefined || mode === 'conformant') return normal;
  const oneTooMany = fc.constant(null).map(() => Array.from({ length: max + 1 }, () => exampleOf(items, field)));
  return fc.oneof({ weight: 12, arbitrary: normal }, { weight: 1, arbitrary: oneTooMany });
}

function valueArb(schema: JsonSchema, field: string, mode: Mode, depth = 0): fc.Arbitrary<unknown> {
  if (field === 'parameters') return functionParametersArb;
  if (depth > 6) return fc.constant(null);
  if (Array.isArray(schema['anyOf'])) {
    const branches = (schema['anyOf'] as JsonSchema[]).filter((s) => mode === 'any' || s['type'] !== 'null');
    return fc.oneof(...branches.map((s) => valueArb(s, field, mode, depth)));
  }
  if (Array.isArray(schema['enum'])) {
    const values = schema['enum'] as unknown[];
    if (mode === 'conformant') return fc.constantFrom(...values);
    return fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...values) }, { weight: 1, arbitrary: fc.constantFrom('', 'x', String(values[0]).toUpperCase()) });
  }
  switch (schema['type']) {
    case 'string':
      return stringArb(schema, field, mode);
    case 'integer':
    case 'number':
      return numberArb(schema, mode);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return arrayArb(schema, field, mode, depth);
    case 'object':
      return objectArb(schema, mode, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/**
 * What a mutation puts somewhere in a body. `⟦…⟧` markers are expanded when the body is
 * serialized: `huge:n` a string of n bytes, `template:n` "{a}" n times, `deepArray:n` and
 * `deepObject:n` n levels of nesting, `manyKeys:n` an object of n keys, `longArray:n` an
 * array of n items; any other name is a reference to the world (⟦agentId⟧).
 */
const WRONG_TYPES: unknown[] = [null, true, false, 0, -1, 1.5, 1e308, '', 'x', 'null', '0', [], {}, [null], ['a'], { a: 1 }];
const ODD_TEXTS: unknown[] = ['\u0000', '\ud800', '\udfff\ud800', '😀'.repeat(50), '\u2028', '\u202e', ' ', 'toString', '__proto__', 'constructor', ref('agentId'), ref('twilioNumber')];
const HUGE_STRINGS: unknown[] = ['⟦huge:70000⟧', '⟦huge:1048576⟧', '⟦huge:4500000⟧', '⟦hugeUnicode:2000000⟧', `⟦huge:${MAX_BODY_BYTES + 60_000}⟧`];
/** Deep nesting: within the 64 levels the pipeline lets through (so handlers see it), and far past it. */
const DEEP_VALUES: unknown[] = ['⟦deepArray:20⟧', '⟦deepArray:60⟧', '⟦deepObject:60⟧', '⟦deepArray:65⟧', '⟦deepArray:5000⟧', '⟦deepObject:100000⟧'];
const WIDE_VALUES: unknown[] = ['⟦manyKeys:50000⟧', '⟦longArray:100000⟧'];
const oddValueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...WRONG_TYPES) },
  { weight: 2, arbitrary: fc.constantFrom(...ODD_TEXTS) },
  { weight: 2, arbitrary: fc.constantFrom(...HUGE_STRINGS) },
  { weight: 3, arbitrary: fc.constantFrom(...DEEP_VALUES) },
  { weight: 1, arbitrary: fc.constantFrom(...WIDE_VALUES) },
);
const PROTO_KEY_VALUES: unknown[] = [{ polluted: true }, { type: 'object' }, 'x', null, [], { toString: 'x' }];

const valueMutationArb: fc.Arbitrary<ValueMutation> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('replace' as const), pick: fc.nat(), value: oddValueArb }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('addKeys' as const), pick: fc.nat(), keys: fc.subarray(PROTO_KEYS, { minLength: 1 }), value: fc.constantFrom(...PROTO_KEY_VALUES) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('dropKey' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('wrapInArray' as const), pick: fc.nat() }) },
);

/** Every place in a value: the root (no parent) and each array item and object property. */
function places(root: unknown): Array<{ parent: any; key: string | number | null }> {
  const out: Array<{ parent: any; key: string | number | null }> = [{ parent: null, key: null }];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach((item, i) => (out.push({ parent: v, key: i }), walk(item)));
    else if (isPlainObject(v)) for (const k of Object.keys(v)) out.push({ parent: v, key: k }), walk(v[k]);
  };
  walk(root);
  return out;
}

function applyValueMutation(value: unknown, m: ValueMutation): unknown {
  let root = clone(value);
  const set = (p: { parent: any; key: string | number | null }, v: unknown) => {
    if (p.parent === null) root = v;
    else if (Array.isArray(p.parent)) p.parent[p.key as number] = v;
    else Object.defineProperty(p.parent, p.key as string, { value: v, enumerable: true, writable: true, configurable: true });
  };
  const get = (p: { parent: any; key: string | number | null }): unknown => (p.parent === null ? root : p.parent[p.key as string | number]);
  if (m.kind === 'templateExpansion') {
    if (!isPlainObject(root)) return root;
    set({ parent: root, key: m.dictionary }, { a: `⟦huge:${m.size}⟧` });
    for (const t of m.texts) set({ parent: root, key: t }, `⟦template:${m.repeat}⟧`);
    return root;
  }
  const all = places(root);
  const place = all[m.pick % all.length]!;
  switch (m.kind) {
    case 'replace':
      set(place, clone(m.value));
      break;
    case 'wrapInArray':
      set(place, [get(place)]);
      break;
    case 'dropKey':
      if (isPlainObject(place.parent)) delete place.parent[place.key as string];
      break;
    case 'addKeys': {
      const target = get(place);
      if (Array.isArray(target)) target.push(...m.keys);
      else {
        const obj = isPlainObject(target) ? target : isPlainObject(root) ? root : null;
        if (obj) for (const k of m.keys) set({ parent: obj, key: k }, clone(m.value));
      }
      break;
    }
  }
  return root;
}

const corruptionArb: fc.Arbitrary<Corruption> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('insertBytes' as const), at: fc.nat(), hex: fc.constantFrom('ff', 'fe', 'c0af', 'c080', 'eda080', 'edbfbf', 'f4908080', '00', 'efbbbf', '80', 'e2') }),
  fc.record({ kind: fc.constant('append' as const), text: fc.constantFrom(',', ' x', '}', ']', '\u0000', '{}', '// c') }),
  fc.record({ kind: fc.constant('prepend' as const), text: fc.constantFrom('\ufeff', ' ', ")]}'\n", '/* c */') }),
  fc.constant({ kind: 'singleQuotes' as const }),
  fc.record({
    kind: fc.constant('replaceWith' as const),
    text: fc.constantFrom(
      '', ' ', 'null', 'true', '"s"', '1e999', 'NaN', '{', '[', '{"a":1,}', "{'a':1}", '{"a":undefined}',
      '{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}', '{"a":1,"a":2}',
      '{"a":"\\ud800"}', '{"a":"\\u0000"}', '{"a":01}', '{"a":-}', '[1,]',
    ),
  }),
);

const TOP_LEVEL_ODDITIES: unknown[] = [null, [], [{}], 'string', 0, true, '⟦deepArray:10000⟧', '⟦deepObject:3000⟧', '⟦huge:4500000⟧', '⟦manyKeys:100000⟧'];

/**
 * A body with a string→string map and prompt-like texts, where `{name}` in the texts is
 * replaced from the map: the map's property and the texts' properties, or null.
 */
function templateFields(schema: JsonSchema): { dictionary: string; texts: string[] } | null {
  const props = Object.entries((schema['properties'] ?? {}) as Record<string, JsonSchema>);
  const dictionary = props.find(([, p]) => p['type'] === 'object' && isPlainObject(p['additionalProperties']) && p['additionalProperties']['type'] === 'string')?.[0];
  const texts = props.filter(([name, p]) => p['type'] === 'string' && /prompt|message/.test(name)).map(([name]) => name);
  return dictionary !== undefined && texts.length > 0 ? { dictionary, texts } : null;
}
const templateExpansionArb = (fields: { dictionary: string; texts: string[] }): fc.Arbitrary<ValueMutation> =>
  fc.record({
    kind: fc.constant('templateExpansion' as const),
    dictionary: fc.constant(fields.dictionary),
    texts: fc.constant(fields.texts),
    repeat: fc.constantFrom(1, 40, 5000),
    size: fc.constantFrom(12, 1_048_576),
  });

function jsonBodyArb(schema: JsonSchema | null): fc.Arbitrary<BodySpec | null> {
  const json = (value: unknown): BodySpec => ({ kind: 'json', value });
  if (!schema) {
    const anything = fc.jsonValue({ maxDepth: 2 });
    return fc.oneof(
      { weight: 14, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: anything.map(json) },
      { weight: 1, arbitrary: fc.constantFrom(...TOP_LEVEL_ODDITIES).map(json) },
      { weight: 1, arbitrary: fc.tuple(anything, corruptionArb).map(([value, corruption]): BodySpec => ({ kind: 'corrupted', value, corruption })) },
    );
  }
  const conformant = valueArb(schema, '', 'conformant');
  const any = valueArb(schema, '', 'any');
  const options: Array<fc.WeightedArbitrary<BodySpec | null>> = [
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 5, arbitrary: conformant.map(json) },
    { weight: 2, arbitrary: any.map(json) },
    { weight: 8, arbitrary: fc.tuple(conformant, fc.array(valueMutationArb, { minLength: 1, maxLength: 3 })).map(([v, ms]) => json(ms.reduce(applyValueMutation, v))) },
    { weight: 1, arbitrary: fc.constantFrom(...TOP_LEVEL_ODDITIES).map(json) },
    { weight: 1, arbitrary: fc.tuple(conformant, corruptionArb).map(([value, corruption]): BodySpec => ({ kind: 'corrupted', value, corruption })) },
  ];
  const templates = templateFields(schema);
  if (templates) {
    options.push({ weight: 2, arbitrary: fc.tuple(conformant, templateExpansionArb(templates)).map(([v, m]) => json(applyValueMutation(v, m))) });
  }
  return fc.oneof(...options);
}

// Carrier webhooks: carrier A form posts, carrier B JSON events, signed or not.
const field = (name: string, values: string[]): fc.Arbitrary<Array<[string, string]>> =>
  fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...values).map((v): Array<[string, string]> => [[name, v]]) }, { weight: 1, arbitrary: fc.constant<Array<[string, string]>>([]) });
const twilioFormArb: fc.Arbitrary<BodySpec> = fc.record({
  kind: fc.constant('twilioForm' as const),
  fields: fc
    .tuple(
      field('CallSid', [`CA${'f'.repeat(32)}`, ref('callCarrierId'), '']),
      field('From', [ref('busyTo'), ref('twilioNumber'), 'anonymous', '']),
      field('To', [ref('twilioNumber'), ref('twilioNumber'), ref('foreignNumber'), ref('telnyxNumber'), '', '+1']),
      field('Direction', ['inbound', 'outbound-api', '', 'toString']),
      field('CallStatus', ['ringing', 'in-progress', 'answered', 'completed', 'busy', 'no-answer', 'failed', 'canceled', 'queued', 'initiated', '', 'constructor', '__proto__']),
      field('CallDuration', ['0', '12', '-1', 'abc', '1e3', '99999999999999999999999', '']),
      field('AnsweredBy', ['human', 'machine_start', 'machine_end_beep', 'fax', 'unknown', 'constructor', '', 'machine_']),
      fc.array(fc.tuple(fc.constantFrom(...PROTO_KEYS, 'CallSid', 'To'), fc.constantFrom('', 'x', ref('twilioNumber'))), { maxLength: 2 }),
    )
    .map((parts) => parts.flat()),
  signature: fc.constantFrom('valid' as const, 'valid' as const, 'valid' as const, 'none' as const, 'garbage' as const),
});
const telnyxEnvelopeArb = fc.record({
  data: fc.record(
    {
      record_type: fc.constant('event'),
      event_type: fc.constantFrom('call.initiated', 'call.answered', 'call.hangup', 'call.machine.detection.ended', 'call.machine.premium.detection.ended', 'streaming.started', 'call.bridged', 'toString', '__proto__', ''),
      payload: fc.record(
        {
          call_control_id: fc.constantFrom(ref('liveCarrierCallId'), ref('liveCarrierCallId'), ref('callCarrierId'), 'v3:fuzz', ''),
          client_state: fc.constantFrom(ref('liveClientState'), ref('liveClientState'), ref('clientState'), null, '', 'bm90IGEgY2FsbA==', '!!!'),
          direction: fc.constantFrom('incoming', 'outgoing', 'sideways', null),
          from: fc.constantFrom(ref('busyTo'), '', 'anonymous'),
          to: fc.constantFrom(ref('telnyxNumber'), ref('telnyxNumber'), ref('twilioNumber'), ref('foreignNumber'), ref('unimportedNumber'), ''),
          hangup_cause: fc.constantFrom('normal_clearing', 'user_busy', 'unspecified', 'toString', 'constructor', '__proto__', 'hasOwnProperty'),
          hangup_source: fc.constantFrom('caller', 'callee', 'unknown', 'toString'),
          result: fc.constantFrom('human', 'machine', 'not_sure', 'constructor', 'toString', '__proto__'),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: ['event_type'] },
  ),
});
const telnyxEventArb: fc.Arbitrary<BodySpec> = fc.record({
  kind: fc.constant('telnyxEvent' as const),
  event: fc.oneof(
    { weight: 6, arbitrary: telnyxEnvelopeArb.map((value): BodySpec => ({ kind: 'json', value })) },
    { weight: 2, arbitrary: fc.tuple(telnyxEnvelopeArb, fc.array(valueMutationArb, { minLength: 1, maxLength: 2 })).map(([v, ms]): BodySpec => ({ kind: 'json', value: ms.reduce(applyValueMutation, v as unknown) })) },
    { weight: 1, arbitrary: fc.tuple(telnyxEnvelopeArb, corruptionArb).map(([value, corruption]): BodySpec => ({ kind: 'corrupted', value, corruption })) },
  ),
  signature: fc.constantFrom('valid' as const, 'valid' as const, 'valid' as const, 'none' as const, 'garbage' as const, 'stale' as const),
  duringLiveCall: fc.boolean(),
});

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
function requestArb(op: Operation): fc.Arbitrary<FuzzRequest> {
  const params = fc.record(Object.fromEntries(op.pathParams.map((p) => [p, paramValueArb(p)])) as Record<string, fc.Arbitrary<ParamValue>>);
  return fc.record({
    method: fc.oneof({ weight: 14, arbitrary: fc.constant(op.method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS, op.method.toLowerCase()) }),
    params,
    mutation: fc.oneof({ weight: 7, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: pathMutationArb }),
    query: queryArb(op),
    authorization: authorizationArb,
    contentType: op.carrier === 'twilio' ? fc.constant('application/x-www-form-urlencoded') : contentTypeArb,
    idempotencyKey: idempotencyKeyArb,
    body: op.carrier === 'twilio' ? fc.option(twilioFormArb, { freq: 8 }) : op.carrier === 'telnyx' ? fc.option(telnyxEventArb, { freq: 8 }) : jsonBodyArb(op.body),
    chunked: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  });
}

// ---------------------------------------------------------------------------------
// Turning a request into bytes, and sending it.

function fillTemplate(op: Operation, params: Record<string, ParamValue>): string {
  return op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = params[name]!;
    if ('ref' in v) {
      const value = refValue(v.ref);
      return v.plusUnencoded ? encodeURIComponent(value).replace(/%2B/g, '+') : encodeURIComponent(value);
    }
    return 'text' in v ? encodeURIComponent(v.text) : v.raw;
  });
}

function mutatePath(path: string, m: PathMutation | null): string {
  if (m === null) return path;
  const segments = path.split('/').slice(1);
  const at = 'at' in m ? m.at % segments.length : 0;
  switch (m.kind) {
    case 'emptySegment':
      segments.splice(at, 0, '');
      break;
    case 'dotSegment':
      segments.splice(at, 0, m.segment);
      break;
    case 'encodedSlash':
      segments[at] += `${m.slash}x`;
      break;
    case 'trailingSlash':
      return path + '/'.repeat(m.count);
    case 'unicode': {
      // Latin-1 letters go out as raw bytes (an HTTP client may do that), the rest percent-encoded.
      const raw = [...m.text].every((c) => c.charCodeAt(0) >= 0xa0 && c.charCodeAt(0) <= 0xff);
      segments[at] += raw ? m.text : encodeURIComponent(m.text);
      break;
    }
    case 'longSegment':
      segments[at] += 'a'.repeat(m.length);
      break;
    case 'upperCase':
      segments[at] = segments[at]!.toUpperCase();
      break;
    case 'encodeFirstChar': {
      const s = segments[at]!;
      if (/^[A-Za-z0-9]/.test(s)) segments[at] = `%${s.charCodeAt(0).toString(16).toUpperCase()}${s.slice(1)}`;
      break;
    }
    case 'extraSegment':
      segments.push(m.segment);
      break;
    case 'dropLastSegment':
      if (segments.length > 1) segments.pop();
      break;
  }
  return `/${segments.join('/')}`;
}

const buildQuery = (entries: QueryEntry[]): string =>
  entries
    .map((e) => (e.raw ? `${e.key}=${e.value}` : `${encodeURIComponent(expandRefs(e.key))}=${encodeURIComponent(expandRefs(e.value))}`))
    .join('&');

function expandMarker(name: string, n: number | undefined): string {
  switch (name) {
    case 'huge':
      return `"${'x'.repeat(n!)}"`;
    case 'hugeUnicode':
      return `"${'é'.repeat(n!)}"`;
    case 'template':
      return `"${'{a}'.repeat(n!)}"`;
    case 'deepArray':
      return '['.repeat(n!) + ']'.repeat(n!);
    case 'deepObject':
      return '{"a":'.repeat(n!) + 'null' + '}'.repeat(n!);
    case 'manyKeys':
      return `{${Array.from({ length: n! }, (_, i) => `"k${i}":0`).join(',')}}`;
    case 'longArray':
      return `[${new Array<string>(n!).fill('0').join(',')}]`;
    default:
      return JSON.stringify(refValue(name));
  }
}
/** JSON text of a value, markers expanded (a marker stands for a whole string value). */
const jsonText = (value: unknown): string =>
  (JSON.stringify(value) ?? 'null').replace(/"⟦(\w+)(?::(\d+))?⟧"/g, (_, name: string, n: string | undefined) => expandMarker(name, n === undefined ? undefined : Number(n)));

function corrupt(text: string, c: Corruption): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  switch (c.kind) {
    case 'truncate':
      return bytes.subarray(0, c.at % (bytes.length + 1));
    case 'insertBytes': {
      // Inside the first string when there is one, so the bytes land in a JSON string value.
      const quote = bytes.indexOf(0x22);
      const at = quote >= 0 ? quote + 1 : c.at % (bytes.length + 1);
      return Buffer.concat([bytes.subarray(0, at), Buffer.from(c.hex, 'hex'), bytes.subarray(at)]);
    }
    case 'append':
      return Buffer.concat([bytes, Buffer.from(c.text, 'utf8')]);
    case 'prepend':
      return Buffer.concat([Buffer.from(c.text, 'utf8'), bytes]);
    case 'singleQuotes':
      return Buffer.from(text.replace(/"/g, "'"), 'utf8');
    case 'replaceWith':
      return Buffer.from(c.text, 'utf8');
  }
}

function bodyBytes(spec: BodySpec): Buffer {
  if (spec.kind === 'json') return Buffer.from(jsonText(spec.value), 'utf8');
  if (spec.kind === 'corrupted') return corrupt(jsonText(spec.value), spec.corruption);
  throw new Error(`${spec.kind} bodies are built with their signature`);
}

interface Sent {
  method: string;
  target: string;
  path: string;
  headers: Array<[string, string]>;
  body: Buffer | null;
  chunked: boolean;
}

function build(op: Operation, req: FuzzRequest): Sent {
  const path = mutatePath(fillTemplate(op, req.params), req.mutation);
  const query = buildQuery(req.query);
  const headers: Array<[string, string]> = [];
  if (req.authorization !== null) headers.push(['authorization', expandRefs(req.authorization)]);
  if (req.contentType !== null) headers.push(['content-type', req.contentType]);
  if (req.idempotencyKey !== null) headers.push(['idempotency-key', expandRefs(req.idempotencyKey)]);
  let body: Buffer | null = null;
  const spec = req.body;
  if (spec?.kind === 'twilioForm') {
    const form = new URLSearchParams(spec.fields.map(([k, v]) => [k, expandRefs(v)]));
    body = Buffer.from(form.toString(), 'utf8');
    // Signed the way the carrier signs: the public URL of the canonical path and the query.
    const search = new URLSearchParams(query).toString();
    const url = `${PUBLIC_BASE}${canonicalForm(path) ?? path}${search ? `?${search}` : ''}`;
    if (spec.signature === 'valid') headers.push(['x-twilio-signature', signTwilio(world.twilioAuthToken, url, form)]);
    if (spec.signature === 'garbage') headers.push(['x-twilio-signature', 'bm90IGEgc2lnbmF0dXJl']);
  } else if (spec?.kind === 'telnyxEvent') {
    body = bodyBytes(spec.event);
    const now = Math.floor(Date.now() / 1000);
    const ts = spec.signature === 'stale' ? now - 3600 : now;
    const privateKey = sims.telnyx.state.keyPairs.get(world.telnyxApiKey)!.privateKey;
    if (spec.signature !== 'none') headers.push(['telnyx-timestamp', String(ts)]);
    if (spec.signature === 'valid' || spec.signature === 'stale') headers.push(['telnyx-signature-ed25519', signTelnyx(privateKey, body, ts)]);
    if (spec.signature === 'garbage') headers.push(['telnyx-signature-ed25519', Buffer.alloc(64, 7).toString('base64')]);
  } else if (spec) {
    body = bodyBytes(spec);
  }
  return { method: req.method, target: query === '' ? path : `${path}?${query}`, path, headers, body, chunked: req.chunked && body !== null };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

function exchange(s: Sent): Promise<Answer> {
  return new Promise((resolvePromise, reject) => {
    // The body's framing is always explicit: node sends a GET or DELETE body unframed otherwise.
    const headers: Record<string, string> = { host: `127.0.0.1:${server.port}`, ...Object.fromEntries(s.headers) };
    if (s.body !== null) headers[s.chunked ? 'transfer-encoding' : 'content-length'] = s.chunked ? 'chunked' : String(s.body.length);
    else if (!['GET', 'HEAD', 'DELETE', 'OPTIONS'].includes(s.method.toUpperCase())) headers['content-length'] = '0';
    const req = http.request(
      { host: '127.0.0.1', port: server.port, method: s.method, path: s.target, headers, agent: keepAlive, timeout: 20_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 20 s')));
    req.on('error', reject);
    if (s.body === null) req.end();
    else if (s.chunked) {
      // Three chunks, so the server assembles a body it did not know the length of.
      const third = Math.ceil(s.body.length / 3);
      req.write(s.body.subarray(0, third));
      req.write(s.body.subarray(third, 2 * third));
      req.end(s.body.subarray(2 * third));
    } else req.end(s.body);
  });
}

// ---------------------------------------------------------------------------------
// The database before and after: a 4xx must change nothing.

/** Rows by table: each row's identity → its text. */
type Snapshot = Map<string, Map<string, string>>;
/** Written on 4xx answers by design: the stored answer an Idempotency-Key replays. */
const UNCOMPARED_TABLES = new Set(['idempotency_keys']);
/**
 * Authentication records a key's last use (at most once a minute), whatever the answer;
 * an account's webhook signing secret is made on first use, which may be the outbox
 * signing an earlier call's delivery in the background.
 */
/**
 * Columns that move on by themselves. A text sent before this request goes on through its
 * number's paced queue and the carrier's status callbacks, as a live call does; a running
 * SMS campaign's status and its recipients follow their texts. Their rows may change
 * there, but none may appear or vanish.
 */
const UNCOMPARED_COLUMNS: Record<string, string[]> = {
  api_keys: ['last_used_at'],
  accounts: ['webhook_secret'],
  sms_messages: ['status', 'carrier_message_id', 'error_code', 'error_message', 'attempts', 'attempted_at', 'sent_at', 'updated_at', 'reply_state'],
  sms_recipients: ['state', 'message_id'],
  sms_campaigns: ['status', 'started_at', 'finished_at'],
};
/**
 * Tables whose rows belong to a call without an actor_id/internal_id column: the SQL that
 * names the owning call as the calls table keys it. A call's webhook deliveries appear in
 * the background (call.started when due, call.completed after its analysis); a delivery of
 * no call (webhook.test) has no owner, so a 4xx that made one is still caught.
 */
const CALL_OWNER_SQL: Record<string, string> = {
  webhook_deliveries: '(SELECT COALESCE(c.internal_id, c.call_id) FROM calls c WHERE c.call_id = webhook_deliveries.call_id)',
};
const quoteName = (name: string): string => `"${name.replace(/"/g, '""')}"`;
const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as Array<{ name: string }>)
  .map((t) => t.name)
  .filter((name) => !UNCOMPARED_TABLES.has(name))
  .map((name) => {
    const info = db.prepare('SELECT name, pk FROM pragma_table_info(?) ORDER BY pk').all(name) as Array<{ name: string; pk: number }>;
    const columns = info.map((c) => c.name);
    // A live call moves on by itself: its row changes, and so do its own rows elsewhere
    // (its actor's snapshot, deadlines, effect intents, sealed prompt), which are keyed
    // by the call they belong to. Only their identities are compared.
    const owner = name === 'calls' ? null : CALL_OWNER_SQL[name] ?? (columns.includes('actor_id') ? quoteName('actor_id') : columns.includes('internal_id') ? quoteName('internal_id') : null);
    const keyColumns = info.filter((c) => c.pk > 0).map((c) => c.name);
    const compared =
      name === 'calls'
        ? 'COALESCE(internal_id, call_id) AS id'
        : owner
          ? `${owner} AS owner, ${keyColumns.length > 0 ? keyColumns.map(quoteName).join(', ') : 'rowid'}`
          : columns.filter((c) => !(UNCOMPARED_COLUMNS[name] ?? []).includes(c)).map(quoteName).join(', ');
    return { name, owner, select: db.prepare(`SELECT ${compared} FROM ${quoteName(name)}`) };
  });

function takeSnapshot(): Snapshot {
  const out: Snapshot = new Map();
  for (const t of tables) {
    const rows = new Map<string, string>();
    for (const row of t.select.all() as Array<Record<string, unknown>>) {
      const text = JSON.stringify(row);
      const key = t.name === 'calls' ? String(row['id']) : t.owner ? `${String(row['owner'])}\n${text}` : text;
      rows.set(rows.has(key) ? `${key}#${rows.size}` : key, text);
    }
    out.set(t.name, rows);
  }
  return out;
}

// PRAGMA data_version changes when another connection commits: while it stays put, the
// last snapshot still holds and nothing needs reading.
const dataVersion = db.prepare('PRAGMA data_version').pluck();
let cached: { version: unknown; snapshot: Snapshot } | null = null;
function snapshot(): Snapshot {
  const version = dataVersion.get();
  if (cached === null || cached.version !== version) cached = { version, snapshot: takeSnapshot() };
  return cached.snapshot;
}

const shorten = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);

/**
 * What changed. Calls may move on by themselves (a live call's row changes), but no call
 * may appear or vanish; a call's own rows may change, appear or go only for a call that
 * existed before; every other row must be exactly as it was.
 */
function changes(before: Snapshot, after: Snapshot): string[] {
  const problems: string[] = [];
  // Calls, and every actor that existed before (a campaign runs on by itself like a call).
  const callsBefore = new Set(before.get('calls')?.keys() ?? []);
  for (const k of before.get('actor_snapshots')?.keys() ?? []) callsBefore.add(k.slice(0, k.indexOf('\n')));
  for (const t of tables) {
    const rowsBefore = before.get(t.name)!;
    const rowsAfter = after.get(t.name)!;
    const appeared = [...rowsAfter.keys()].filter((k) => !rowsBefore.has(k));
    const vanished = [...rowsBefore.keys()].filter((k) => !rowsAfter.has(k));
    if (t.name === 'calls') {
      for (const k of appeared) problems.push(`calls: a call ${k} appeared`);
      for (const k of vanished) problems.push(`calls: the call ${k} vanished`);
    } else if (t.owner) {
      for (const k of [...appeared, ...vanished]) {
        const call = k.slice(0, k.indexOf('\n'));
        if (!callsBefore.has(call)) problems.push(`${t.name}: a row of ${call}, not a call before this request, ${appeared.includes(k) ? 'appeared' : 'vanished'}`);
      }
    } else {
      for (const k of appeared) problems.push(`${t.name}: row added ${shorten(rowsAfter.get(k)!, 300)}`);
      for (const k of vanished) problems.push(`${t.name}: row removed or changed ${shorten(rowsBefore.get(k)!, 300)}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------
// What every answer must be.

const UNIVERSAL_400 = ['invalid_path', 'malformed_request'];

/** How deeply a body nests arrays and objects (outside strings). */
function nesting(bytes: Buffer): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c) i++;
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) max = Math.max(max, ++depth);
    else if (b === 0x5d || b === 0x7d) depth--;
  }
  return max;
}

/** No gap is tolerated any more: GET bodies are ignored and every body-reading operation documents its JSON errors. */
function reportedGap(_s: Sent, _status: number, _code: unknown): boolean {
  return false;
}

function allowedCodes(r: Resolution): Map<number, Set<string>> {
  const out = new Map<number, Set<string>>([[400, new Set(UNIVERSAL_400)]]);
  const add = (status: number, ...codes: string[]) => {
    const set = out.get(status) ?? new Set<string>();
    for (const c of codes) set.add(c);
    out.set(status, set);
  };
  if (r.kind === 'operation') for (const [status, codes] of r.op.codes) add(status, ...codes);
  if (r.kind === 'no_route') add(404, 'route_not_found');
  if (r.kind === 'wrong_method') add(405, 'method_not_allowed');
  if ((r.kind === 'no_route' || r.kind === 'wrong_method') && r.v1) {
    add(401, 'invalid_api_key', 'key_secret_required');
    add(429, 'rate_limit_exceeded');
  }
  return out;
}

function judge(s: Sent, a: Answer, before: Snapshot, after: Snapshot | null): string[] {
  const problems: string[] = [];
  const r = resolve(s.method, s.path);
  const head = s.method.toUpperCase() === 'HEAD';
  const allowed = allowedCodes(r);
  let body: any;
  try {
    body = a.text === '' ? undefined : JSON.parse(a.text);
  } catch {
    body = undefined;
  }
  const code: unknown = body?.error?.code;
  const documentedPlain = r.kind === 'operation' && r.op.statuses.has(a.status) && !r.op.codes.has(a.status);

  if (a.headers['x-request-id'] === undefined) problems.push('no X-Request-Id header');
  if (r.kind === 'invalid_path' && (a.status !== 400 || (!head && code !== 'invalid_path'))) {
    problems.push(`the path is not canonical, but the answer is not 400 invalid_path`);
  }
  const gap = reportedGap(s, a.status, code);
  if (r.kind === 'operation' && !r.op.statuses.has(a.status) && !gap) problems.push(`${a.status} is not a status the document lists for ${r.op.id}`);
  if (r.kind !== 'operation' && !allowed.has(a.status)) problems.push(`${a.status} is not an answer for ${r.kind === 'no_route' ? 'a path with no route' : 'a method the path does not have'}`);
  if (r.kind === 'wrong_method' && a.status === 405) {
    const allow = String(a.headers['allow'] ?? '').split(',').map((m) => m.trim()).filter(Boolean).sort();
    if (allow.join(',') !== [...r.allowed].sort().join(',')) problems.push(`Allow is "${a.headers['allow']}", the document has ${r.allowed.join(', ')}`);
  }
  if (a.status >= 500) {
    const documentedProviderError = r.kind === 'operation' && a.status >= 502 && (documentedPlain || (typeof code === 'string' && r.op.codes.get(a.status)?.has(code) === true));
    if (a.status === 500 || !documentedProviderError) problems.push(`server error ${a.status}`);
  }
  if (a.status >= 400 && !head && !documentedPlain) {
    const e = body?.error;
    if (!isPlainObject(e) || typeof e['type'] !== 'string' || typeof e['code'] !== 'string' || typeof e['message'] !== 'string' || e['message'] === '') {
      problems.push('the answer is not the error envelope {error:{type, code, message}}');
    } else {
      const listed = allowed.get(a.status);
      if (!listed?.has(e['code']) && !gap) {
        const where = r.kind === 'operation' ? r.op.id : r.kind;
        problems.push(`code ${e['code']} is not one the document lists for ${where} under ${a.status} (${[...(listed ?? [])].join(', ') || 'none'})`);
      }
      const spec = registry[e['code']];
      if (!spec) problems.push(`code ${e['code']} is not in the document's error registry`);
      else if (spec.status === a.status ? spec.type !== e['type'] : a.status !== 400 || e['type'] !== 'invalid_request') {
        problems.push(`type ${e['type']} with status ${a.status} does not fit the registry's ${spec.type}/${spec.status} for ${e['code']}`);
      }
    }
  }
  if (a.status < 400 && !head && String(a.headers['content-type'] ?? '').startsWith('application/json') && body === undefined) {
    problems.push('a JSON answer that does not parse');
  }
  if (after !== null) problems.push(...changes(before, after).map((c) => `a ${a.status} answer changed the database: ${c}`));
  return problems;
}

function describeRequest(s: Sent): string {
  const body = s.body === null ? 'none' : `${s.body.length} bytes${s.chunked ? ', chunked' : ''}: ${shorten(s.body.toString('utf8'), 300)}`;
  return [
    `${s.method} ${shorten(s.target, 300)}`,
    `headers ${JSON.stringify(s.headers.map(([k, v]) => [k, shorten(v, 80)]))}`,
    `body ${body}`,
  ].join('\n    ');
}

// ---------------------------------------------------------------------------------
// One property per operation of the document.

const stats = new Map<string, Map<string, number>>();
const timing = { world: 0, snapshot: 0, exchange: 0 };
let lastSent: Sent | null = null;

/** Sends one generated request to `op` and throws, with the request and answer, on any problem. */
async function fuzzOnce(op: Operation, req: FuzzRequest, seen: Map<string, number>): Promise<void> {
  let t0 = performance.now();
  await ensureWorld();
  const duringLiveCall = req.body?.kind === 'telnyxEvent' && req.body.duringLiveCall;
  if (duringLiveCall) await startLiveCall();
  timing.world += performance.now() - t0;
  t0 = performance.now();
  const before = snapshot();
  timing.snapshot += performance.now() - t0;

  const sent = build(op, req);
  serverLog = [];
  let answer: Answer;
  try {
    t0 = performance.now();
    answer = await exchange(sent);
    timing.exchange += performance.now() - t0;
  } catch (err) {
    const previous = lastSent ? `\n  the request before it on the same connection:\n    ${describeRequest(lastSent)}` : '';
    throw new Error(`no answer (${(err as Error).message})\n    ${describeRequest(sent)}${previous}`);
  } finally {
    lastSent = sent;
  }
  const code = /"code":"(\w+)"/.exec(answer.text)?.[1];
  const outcome = code ? `${answer.status} ${code}` : String(answer.status);
  seen.set(outcome, (seen.get(outcome) ?? 0) + 1);

  const after = answer.status >= 400 && answer.status < 500 ? snapshot() : null;
  const problems = judge(sent, answer, before, after);
  if (serverLog.some((l) => l.msg === DROPPED_EVENT)) problems.push(`the server ${DROPPED_EVENT}: its carrier parser produced an event the call machine refuses`);
  if (duringLiveCall) await liveCall?.hangup().catch(() => undefined);
  if (problems.length > 0) {
    const logged = serverLog.filter((l) => l.level >= 50 || l.msg === DROPPED_EVENT).map((l) => `\n    server log: ${shorten(l.line, 800)}`);
    throw new Error(`${problems.join('\n  ')}\n    ${describeRequest(sent)}\n    → ${answer.status} ${shorten(answer.text, 600)}${logged.join('')}`);
  }
}

describe('API fuzz: every operation of GET /v1/openapi.json', () => {
  it('the document has the operations this suite expects to fuzz', () => {
    // A guard against fuzzing nothing: carrier webhooks and public routes are in it too.
    const ids = new Set(operations.map((o) => o.id));
    for (const id of ['POST /v1/agents', 'POST /carrier/twilio/voice', 'POST /carrier/telnyx/events/{token}', 'GET /healthz', 'GET /v1/openapi.json']) {
      if (!ids.has(id)) throw new Error(`${id} is missing from the document`);
    }
  });

  for (const op of operations) {
    it(op.id, async () => {
      const seen = new Map<string, number>();
      stats.set(op.id, seen);
      await fc.assert(
        fc.asyncProperty(requestArb(op), (req) => fuzzOnce(op, req, seen)),
        // Operations with a body, and carrier webhooks, have the most to explore: twice the runs.
        { numRuns: op.body || op.carrier ? 2 * RUNS_PER_OPERATION : RUNS_PER_OPERATION, ...(SEED === undefined ? {} : { seed: SEED }) },
      );
    }, 120_000);
  }

  it('summary', () => {
    if (!PRINT_STATS) return;
    const lines = [...stats].map(([id, seen]) => `${id}\n    ${[...seen].sort().map(([s, n]) => `${s}×${n}`).join(', ')}`);
    console.log(`${lines.join('\n')}\nworld rebuilds: ${rebuilds}; ms in world ${Math.round(timing.world)}, snapshots ${Math.round(timing.snapshot)}, requests ${Math.round(timing.exchange)}`);
  });
});

// What this fuzz found, pinned as plain examples so they stay fixed whatever the seed.
describe('found by the fuzz', () => {
  const base: FuzzRequest = {
    method: 'POST',
    params: {},
    mutation: null,
    query: [],
    authorization: `Bearer ${ref('key')}`,
    contentType: 'application/json',
    idempotencyKey: null,
    body: null,
    chunked: false,
  };
  const operation = (id: string): Operation => operations.find((o) => o.id === id)!;

  it('a prompt whose {name} references multiply a huge dynamic_vars value is 400, not 500, and places no call', async () => {
    await ensureWorld();
    const calls = count('SELECT COUNT(*) AS n FROM calls');
    // 5000 × 1 MiB: V8 refused the 5 GB string (a 500); 40 × 1 MiB was a 40 MB prompt held and sealed per call.
    for (const repeat of [5000, 40]) {
      const body = { agent_id: ref('agentId'), to_number: ref('busyTo'), prompt: `⟦template:${repeat}⟧`, dynamic_vars: { a: '⟦huge:1048576⟧' } };
      const answer = await exchange(build(operation('POST /v1/calls/outbound'), { ...base, body: { kind: 'json', value: body } }));
      const error = JSON.parse(answer.text).error;
      if (answer.status !== 400 || error.code !== 'invalid_request' || error.details?.field !== 'dynamic_vars') {
        throw new Error(`expected 400 invalid_request naming dynamic_vars, got ${answer.status} ${shorten(answer.text, 300)}`);
      }
    }
    if (count('SELECT COUNT(*) AS n FROM calls') !== calls) throw new Error('a refused call left a call record');
  });

  it('a carrier B hang-up whose hangup_cause is a prototype key ("constructor") still ends the live call', async () => {
    await ensureWorld();
    await startLiveCall();
    serverLog = [];
    const event = { data: { event_type: 'call.hangup', payload: { call_control_id: ref('liveCarrierCallId'), client_state: ref('liveClientState'), hangup_cause: 'constructor' } } };
    const answer = await exchange(
      build(operation('POST /carrier/telnyx/events/{token}'), {
        ...base,
        params: { token: { ref: 'telnyxToken', plusUnencoded: false } },
        authorization: null,
        body: { kind: 'telnyxEvent', event: { kind: 'json', value: event }, signature: 'valid', duringLiveCall: true },
      }),
    );
    if (answer.status !== 200) throw new Error(`expected 200, got ${answer.status} ${answer.text}`);
    if (serverLog.some((l) => l.msg === DROPPED_EVENT)) throw new Error(`the hang-up was ${DROPPED_EVENT}`);
    // An unknown cause counts as failed: the call is over, not left live.
    const ended = db.prepare('SELECT ended_at FROM calls WHERE internal_id = ?').pluck();
    for (let i = 0; i < 100 && ended.get(liveCall!.internalId) === null; i++) await new Promise((r) => setTimeout(r, 20));
    if (ended.get(liveCall!.internalId) === null) throw new Error('the call is still live after the carrier hung it up');
  });
});
