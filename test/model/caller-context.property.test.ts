// Model-based test: random sequences of PUT (random subsets of fields with values, null
// or blanks), DELETE and import (with repeated callers) on one number, against a model
// Map<caller, context>. After every command each caller's GET and the list must equal it.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { createAgent, importTwilioNumber, startCarrierSims, type CarrierSims } from '../helpers/fixtures.ts';

const FIELDS = ['name', 'email', 'phone', 'location', 'reference_id', 'preference'] as const;
type Field = (typeof FIELDS)[number];
type Body = Partial<Record<Field, string | null>>;
type Model = Map<string, Partial<Record<Field, string>>>;
interface Real {
  key: string;
  number: string;
}

const POOL = ['+16505550101', '+16505550102', '+16505550103', '+447700900123'];

let sims: CarrierSims;
let server: TestServer;
beforeAll(async () => {
  sims = await startCarrierSims();
  server = await startTestServer({ ...sims.env, RATE_LIMIT_READS_PER_MIN: '1000000', RATE_LIMIT_WRITES_PER_MIN: '1000000' });
});
afterAll(async () => {
  await server?.close();
  await sims?.close();
});

const enc = encodeURIComponent;
const callersPath = (r: Real) => `/v1/phone-numbers/${enc(r.number)}/callers`;

/** What a body changes: null removes, a string with content sets, blanks change nothing. */
function effective(body: Body): Body {
  const out: Body = {};
  for (const f of FIELDS) {
    const v = body[f];
    if (v === null) out[f] = null;
    else if (typeof v === 'string' && v.trim() !== '') out[f] = v;
  }
  return out;
}

function apply(m: Model, caller: string, change: Body): void {
  const record = { ...(m.get(caller) ?? {}) };
  for (const f of FIELDS) {
    const v = change[f];
    if (v === null) delete record[f];
    else if (v !== undefined) record[f] = v;
  }
  m.set(caller, record);
}

/** Every caller's GET, and the list, equal the model; the list is newest updated first. */
async function verify(m: Model, r: Real): Promise<void> {
  for (const caller of POOL) {
    const res = await server.request('GET', `${callersPath(r)}/${enc(caller)}`, { key: r.key });
    const want = m.get(caller);
    if (want) {
      expect(res.status, res.text).toBe(200);
      expect(res.body.caller).toEqual({ phone_number: r.number, caller_number: caller, context: want, updated_at: expect.any(String) });
    } else {
      expect(res.status, res.text).toBe(404);
      expect(res.body.error.code).toBe('caller_not_found');
    }
  }
  const list = await server.request('GET', `${callersPath(r)}?limit=100`, { key: r.key });
  expect(list.status).toBe(200);
  expect(list.body.count).toBe(m.size);
  const items = list.body.callers as { caller_number: string; context: object; updated_at: string }[];
  expect(Object.fromEntries(items.map((c) => [c.caller_number, c.context]))).toEqual(Object.fromEntries(m));
  const ordered = [...items].sort((a, b) => b.updated_at.localeCompare(a.updated_at) || a.caller_number.localeCompare(b.caller_number));
  expect(items).toEqual(ordered);
}

class Put implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly caller: string,
    readonly body: Body,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const res = await server.request('PUT', `${callersPath(r)}/${enc(this.caller)}`, { key: r.key, body: this.body });
    const change = effective(this.body);
    if (Object.keys(change).length === 0) {
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.code).toBe('missing_field');
    } else {
      expect(res.status, res.text).toBe(200);
      apply(m, this.caller, change);
      expect(res.body.caller.context).toEqual(m.get(this.caller));
    }
    await verify(m, r);
  }
  toString = () => `Put(${this.caller}, ${JSON.stringify(this.body)})`;
}

class Delete implements fc.AsyncCommand<Model, Real> {
  constructor(readonly caller: string) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const res = await server.request('DELETE', `${callersPath(r)}/${enc(this.caller)}`, { key: r.key });
    if (m.has(this.caller)) {
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ phone_number: r.number, caller_number: this.caller, deleted: true });
      m.delete(this.caller);
    } else {
      expect(res.status, res.text).toBe(404);
      expect(res.body.error.code).toBe('caller_not_found');
    }
    await verify(m, r);
  }
  toString = () => `Delete(${this.caller})`;
}

interface Row {
  caller: string;
  /** Sent without its leading +, which the import adds back. */
  dropPlus: boolean;
  fields: Body;
}

class Import implements fc.AsyncCommand<Model, Real> {
  constructor(readonly rows: Row[]) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const callers = this.rows.map((row) => ({ caller_number: row.dropPlus ? row.caller.slice(1) : row.caller, ...row.fields }));
    const res = await server.request('POST', `${callersPath(r)}/import`, { key: r.key, body: { callers } });
    const empty = this.rows.findIndex((row) => Object.keys(effective(row.fields)).length === 0);
    if (empty >= 0) {
      // One row that sets nothing rejects the whole file, and the model stays as it was.
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.code).toBe('missing_field');
      expect(res.body.error.message.startsWith(`Row ${empty + 1}: `)).toBe(true);
    } else {
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ phone_number: r.number, imported: new Set(this.rows.map((row) => row.caller)).size });
      for (const row of this.rows) apply(m, row.caller, effective(row.fields));
    }
    await verify(m, r);
  }
  toString = () => `Import(${JSON.stringify(this.rows)})`;
}

const text = fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }));
const email = fc
  .tuple(fc.stringMatching(/^[a-z0-9][a-z0-9._+-]{0,8}[a-z0-9]$/), fc.constantFrom('example.com', 'mail.example.org'))
  .filter(([local]) => !local.includes('..'))
  .map(([local, domain]) => `${local}@${domain}`);
const value = (set: fc.Arbitrary<string>) =>
  fc.oneof({ weight: 4, arbitrary: set }, { weight: 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom('', '   ') });
const body: fc.Arbitrary<Body> = fc.record(
  {
    name: value(text),
    email: value(email),
    phone: value(text),
    location: value(text),
    reference_id: value(text),
    preference: value(text),
  },
  { requiredKeys: [] },
);
const caller = fc.constantFrom(...POOL);

const commands = fc.commands(
  [
    fc.tuple(caller, body).map(([c, b]) => new Put(c, b)),
    caller.map((c) => new Delete(c)),
    fc.array(fc.record({ caller, dropPlus: fc.boolean(), fields: body }), { minLength: 1, maxLength: 6 }).map((rows) => new Import(rows)),
  ],
  { maxCommands: 12 },
);

it('caller context behaves like a map of merged records', async () => {
  await fc.assert(
    fc.asyncProperty(commands, async (cmds) => {
      const setup = async () => {
        // A fresh account and number per run, so runs never see each other's records.
        const { key } = await server.newAccount();
        const number = await importTwilioNumber(server, sims, key, await createAgent(server, key));
        return { model: new Map() as Model, real: { key, number } };
      };
      await fc.asyncModelRun(setup, cmds);
    }),
    { numRuns: 40 },
  );
}, 180_000);
