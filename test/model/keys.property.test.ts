// Model-based test: random sequences of account creation, key creation, revocation,
// authentication and listing against a model of which keys each account holds.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';

interface ModelKey {
  id: string;
  token: string;
  revoked: boolean;
}
interface Model {
  accounts: Array<{ id: string; keys: ModelKey[] }>;
}
interface Real {
  server: TestServer;
}

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_READS_PER_MIN: '1000000', RATE_LIMIT_WRITES_PER_MIN: '1000000' });
});
afterAll(() => server.close());

const pick = <T>(list: T[], n: number): T => list[n % list.length]!;
const activeCount = (a: { keys: ModelKey[] }) => a.keys.filter((k) => !k.revoked).length;

class CreateAccount implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(m: Model, r: Real) {
    const res = await r.server.request('POST', '/v1/keys', { body: {} });
    expect(res.status).toBe(201);
    m.accounts.push({ id: res.body.account_id, keys: [{ id: res.body.key_id, token: `${res.body.key_id}:${res.body.key_secret}`, revoked: false }] });
  }
  toString = () => 'CreateAccount';
}

class AddKey implements fc.AsyncCommand<Model, Real> {
  constructor(readonly a: number, readonly via: number) {}
  check = (m: Readonly<Model>) => m.accounts.length > 0;
  async run(m: Model, r: Real) {
    const acct = pick(m.accounts, this.a);
    const via = pick(acct.keys, this.via);
    const res = await r.server.request('POST', '/v1/keys', { key: via.token, body: {} });
    if (via.revoked) {
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('invalid_api_key');
      return;
    }
    expect(res.status).toBe(201);
    expect(res.body.account_id).toBe(acct.id);
    acct.keys.push({ id: res.body.key_id, token: `${res.body.key_id}:${res.body.key_secret}`, revoked: false });
  }
  toString = () => `AddKey(${this.a}, via ${this.via})`;
}

class Revoke implements fc.AsyncCommand<Model, Real> {
  constructor(readonly a: number, readonly via: number, readonly ta: number, readonly tk: number) {}
  check = (m: Readonly<Model>) => m.accounts.length > 0;
  async run(m: Model, r: Real) {
    const acct = pick(m.accounts, this.a);
    const via = pick(acct.keys, this.via);
    const targetAcct = pick(m.accounts, this.ta);
    const target = pick(targetAcct.keys, this.tk);
    const res = await r.server.request('DELETE', `/v1/keys/${target.id}`, { key: via.token });
    if (via.revoked) {
      expect(res.status).toBe(401);
    } else if (targetAcct !== acct) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('key_not_found');
    } else if (target.revoked) {
      expect(res.status).toBe(200);
    } else if (activeCount(acct) === 1) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('last_active_key');
    } else {
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ key_id: target.id, revoked: true });
      target.revoked = true;
    }
  }
  toString = () => `Revoke(${this.ta}/${this.tk} via ${this.a}/${this.via})`;
}

class Authenticate implements fc.AsyncCommand<Model, Real> {
  constructor(readonly a: number, readonly k: number) {}
  check = (m: Readonly<Model>) => m.accounts.length > 0;
  async run(m: Model, r: Real) {
    const acct = pick(m.accounts, this.a);
    const key = pick(acct.keys, this.k);
    const res = await r.server.request('GET', '/v1/account', { key: key.token });
    if (key.revoked) {
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('invalid_api_key');
    } else {
      expect(res.status).toBe(200);
      expect(res.body.account_id).toBe(acct.id);
    }
  }
  toString = () => `Authenticate(${this.a}/${this.k})`;
}

class List implements fc.AsyncCommand<Model, Real> {
  constructor(readonly a: number, readonly via: number) {}
  check = (m: Readonly<Model>) => m.accounts.length > 0;
  async run(m: Model, r: Real) {
    const acct = pick(m.accounts, this.a);
    const via = pick(acct.keys, this.via);
    const res = await r.server.request('GET', '/v1/keys', { key: via.token });
    if (via.revoked) {
      expect(res.status).toBe(401);
      return;
    }
    const seen = res.body.keys.map((k: { key_id: string; revoked_at: string | null }) => [k.key_id, k.revoked_at !== null]).sort();
    expect(seen).toEqual(acct.keys.map((k) => [k.id, k.revoked]).sort());
    expect(res.body.count).toBe(acct.keys.length);
  }
  toString = () => `List(${this.a} via ${this.via})`;
}

const idx = fc.nat({ max: 50 });
const commands = [
  fc.constant(new CreateAccount()),
  fc.tuple(idx, idx).map(([a, v]) => new AddKey(a, v)),
  fc.tuple(idx, idx, idx, idx).map(([a, v, ta, tk]) => new Revoke(a, v, ta, tk)),
  fc.tuple(idx, idx).map(([a, k]) => new Authenticate(a, k)),
  fc.tuple(idx, idx).map(([a, v]) => new List(a, v)),
];

it('keys behave like the model under any sequence of operations', async () => {
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
      await fc.asyncModelRun(() => ({ model: { accounts: [] }, real: { server } }), cmds);
    }),
    { numRuns: 40 },
  );
});
