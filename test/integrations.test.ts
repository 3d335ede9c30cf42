// Per-number and per-agent integrations through the real server: every kind's PUT,
// GET and DELETE, the URL rules (https only; private targets refused unless
// ALLOW_PRIVATE_NETWORK_TARGETS), missing fields, and the CRM token that is never
// returned and never stored in clear.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestServer, type TestServer } from './helpers/server.ts';
import { createAgent, importTwilioNumber, startCarrierSims, type CarrierSims } from './helpers/fixtures.ts';

let sims: CarrierSims;
/** ALLOW_PRIVATE_NETWORK_TARGETS=true: hosts are not resolved, so example hosts work offline. */
let server: TestServer;
/** ALLOW_PRIVATE_NETWORK_TARGETS=false: public IP literals pass, everything private is refused. */
let strict: TestServer;

beforeAll(async () => {
  sims = await startCarrierSims();
  [server, strict] = await Promise.all([
    startTestServer({ ...sims.env, ALLOW_PRIVATE_NETWORK_TARGETS: 'true' }),
    startTestServer({ ...sims.env, ALLOW_PRIVATE_NETWORK_TARGETS: 'false' }),
  ]);
});
afterAll(async () => {
  await Promise.all([server?.close(), strict?.close()]);
  await sims?.close();
});

interface Owner {
  key: string;
  agentId: string;
  phone: string;
}

async function owner(srv: TestServer = server): Promise<Owner> {
  const { key } = await srv.newAccount();
  const agentId = await createAgent(srv, key);
  const phone = await importTwilioNumber(srv, sims, key, agentId);
  return { key, agentId, phone };
}

const enc = encodeURIComponent;
const numberPath = (kind: string, phone: string) => `/v1/integrations/${kind}/number/${enc(phone)}`;
const agentPath = (agentId: string) => `/v1/integrations/precall/agent/${enc(agentId)}`;

/** Every kind on a number: a valid body, the body GET then answers, and the unset body. */
const NUMBER_KINDS = [
  {
    kind: 'webhook',
    body: { url: 'https://hooks.example.com/calls' },
    set: { webhook_url: 'https://hooks.example.com/calls' },
    unset: { webhook_url: null },
  },
  {
    kind: 'webhook2',
    body: { url: 'https://backup.example.com/calls?src=sb' },
    set: { webhook_url_2: 'https://backup.example.com/calls?src=sb' },
    unset: { webhook_url_2: null },
  },
  {
    kind: 'automation',
    body: { post_call_url: 'https://flows.example.com/post', in_call_url: 'https://flows.example.com/live' },
    set: { post_call_url: 'https://flows.example.com/post', in_call_url: 'https://flows.example.com/live' },
    unset: { post_call_url: null, in_call_url: null },
  },
  {
    kind: 'precall',
    body: { url: 'https://gate.example.com/screen' },
    set: { url: 'https://gate.example.com/screen' },
    unset: { url: null },
  },
  {
    kind: 'crm',
    body: { pit: 'pit-0f3c9a1e-token', location_id: 'loc_123', calendar_id: 'cal_9' },
    set: { location_id: 'loc_123', calendar_id: 'cal_9' },
    unset: { location_id: null, calendar_id: null },
  },
] as const;

describe.each(NUMBER_KINDS)('$kind integration on a number', ({ kind, body, set, unset }) => {
  it('reads unset, PUT answers what GET then returns, DELETE unsets it (idempotently)', async () => {
    const o = await owner();
    const path = numberPath(kind, o.phone);

    const before = await server.request('GET', path, { key: o.key });
    expect(before.status).toBe(200);
    expect(before.body).toEqual({ phone_number: o.phone, ...unset, is_set: false });

    const put = await server.request('PUT', path, { key: o.key, body });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ phone_number: o.phone, ...set, is_set: true });
    const got = await server.request('GET', path, { key: o.key });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(put.body);

    const del = await server.request('DELETE', path, { key: o.key });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ phone_number: o.phone, deleted: true });
    expect((await server.request('GET', path, { key: o.key })).body).toEqual(before.body);

    const again = await server.request('DELETE', path, { key: o.key });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ phone_number: o.phone, deleted: true });
  });

  it('answers 404 number_not_found for a number the account never imported, and creates nothing', async () => {
    const o = await owner();
    const path = numberPath(kind, '+14155550000');
    expectError(await server.request('GET', path, { key: o.key }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('PUT', path, { key: o.key, body }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('DELETE', path, { key: o.key }), 404, 'not_found', 'number_not_found');
    expectError(await server.request('GET', numberPath(kind, 'not-a-number'), { key: o.key }), 404, 'not_found', 'number_not_found');
  });

  it('rejects unknown fields, naming them, and changes nothing', async () => {
    const o = await owner();
    const path = numberPath(kind, o.phone);
    const res = await server.request('PUT', path, { key: o.key, body: { ...body, colour: 'blue' } });
    expectError(res, 400, 'invalid_request', 'invalid_request');
    expect(res.body.error.details).toEqual({ field: 'colour' });
    expect((await server.request('GET', path, { key: o.key })).body.is_set).toBe(false);
  });
});

describe('the kinds are independent', () => {
  it('setting one kind leaves the others unset, and deleting one leaves the others set', async () => {
    const o = await owner();
    await server.request('PUT', numberPath('webhook', o.phone), { key: o.key, body: { url: 'https://a.example.com/1' } });
    expect((await server.request('GET', numberPath('webhook2', o.phone), { key: o.key })).body.is_set).toBe(false);
    await server.request('PUT', numberPath('webhook2', o.phone), { key: o.key, body: { url: 'https://a.example.com/1' } });
    await server.request('DELETE', numberPath('webhook2', o.phone), { key: o.key });
    expect((await server.request('GET', numberPath('webhook', o.phone), { key: o.key })).body.webhook_url).toBe('https://a.example.com/1');
  });

  it('a second PUT replaces the first', async () => {
    const o = await owner();
    const path = numberPath('webhook', o.phone);
    await server.request('PUT', path, { key: o.key, body: { url: 'https://a.example.com/old' } });
    const put = await server.request('PUT', path, { key: o.key, body: { url: 'https://a.example.com/new' } });
    expect(put.body.webhook_url).toBe('https://a.example.com/new');
    expect((await server.request('GET', path, { key: o.key })).body.webhook_url).toBe('https://a.example.com/new');
  });

  it('a fetched setting can be sent back as the PUT body', async () => {
    const o = await owner();
    const path = numberPath('automation', o.phone);
    const first = await server.request('PUT', path, { key: o.key, body: { post_call_url: 'https://flows.example.com/post' } });
    const back = await server.request('PUT', path, { key: o.key, body: first.body });
    expect(back.status).toBe(200);
    expect(back.body).toEqual(first.body);
  });

  it("deleting the number takes its integrations with it", async () => {
    const o = await owner();
    await server.request('PUT', numberPath('webhook', o.phone), { key: o.key, body: { url: 'https://a.example.com/1' } });
    expect((await server.request('DELETE', `/v1/phone-numbers/${enc(o.phone)}`, { key: o.key })).status).toBe(200);
    expectError(await server.request('GET', numberPath('webhook', o.phone), { key: o.key }), 404, 'not_found', 'number_not_found');
    await importTwilioNumber(server, sims, o.key, o.agentId, o.phone);
    expect((await server.request('GET', numberPath('webhook', o.phone), { key: o.key })).body.is_set).toBe(false);
  });
});

describe('automation', () => {
  it('takes either URL alone; the other reads back null', async () => {
    const o = await owner();
    const path = numberPath('automation', o.phone);
    const post = await server.request('PUT', path, { key: o.key, body: { post_call_url: 'https://flows.example.com/post' } });
    expect(post.body).toEqual({ phone_number: o.phone, post_call_url: 'https://flows.example.com/post', in_call_url: null, is_set: true });
    // PUT replaces: the post-call URL left out of this body is cleared.
    const live = await server.request('PUT', path, { key: o.key, body: { in_call_url: 'https://flows.example.com/live', post_call_url: '' } });
    expect(live.body).toEqual({ phone_number: o.phone, post_call_url: null, in_call_url: 'https://flows.example.com/live', is_set: true });
    expect((await server.request('GET', path, { key: o.key })).body).toEqual(live.body);
  });

  it('needs at least one URL: missing_field, nothing changed', async () => {
    const o = await owner();
    const path = numberPath('automation', o.phone);
    await server.request('PUT', path, { key: o.key, body: { post_call_url: 'https://flows.example.com/post' } });
    for (const body of [{}, { post_call_url: null, in_call_url: null }, { post_call_url: '', in_call_url: '' }]) {
      const res = await server.request('PUT', path, { key: o.key, body });
      expectError(res, 400, 'invalid_request', 'missing_field');
      expect(res.body.error.details).toEqual({ field: 'post_call_url' });
    }
    expect((await server.request('GET', path, { key: o.key })).body.post_call_url).toBe('https://flows.example.com/post');
  });

  it('names the bad one of two URLs', async () => {
    const o = await owner();
    const res = await server.request('PUT', numberPath('automation', o.phone), {
      key: o.key,
      body: { post_call_url: 'https://flows.example.com/post', in_call_url: 'http://flows.example.com/live' },
    });
    expectError(res, 400, 'invalid_request', 'invalid_url');
    expect(res.body.error.details).toEqual({ field: 'in_call_url' });
  });
});

describe('pre-call on an agent', () => {
  it('PUT answers what GET returns; DELETE unsets; independent of the per-number pre-call', async () => {
    const o = await owner();
    const path = agentPath(o.agentId);
    expect((await server.request('GET', path, { key: o.key })).body).toEqual({ agent_id: o.agentId, url: null, is_set: false });
    const put = await server.request('PUT', path, { key: o.key, body: { url: 'https://gate.example.com/agent' } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ agent_id: o.agentId, url: 'https://gate.example.com/agent', is_set: true });
    expect((await server.request('GET', path, { key: o.key })).body).toEqual(put.body);
    expect((await server.request('GET', numberPath('precall', o.phone), { key: o.key })).body.is_set).toBe(false);

    const del = await server.request('DELETE', path, { key: o.key });
    expect(del.body).toEqual({ agent_id: o.agentId, deleted: true });
    expect((await server.request('GET', path, { key: o.key })).body.is_set).toBe(false);
    expect((await server.request('DELETE', path, { key: o.key })).body).toEqual({ agent_id: o.agentId, deleted: true });
  });

  it('answers 404 agent_not_found for an unknown agent', async () => {
    const o = await owner();
    const path = agentPath('agent_doesnotexist000000000000');
    expectError(await server.request('GET', path, { key: o.key }), 404, 'not_found', 'agent_not_found');
    expectError(await server.request('PUT', path, { key: o.key, body: { url: 'https://gate.example.com/agent' } }), 404, 'not_found', 'agent_not_found');
    expectError(await server.request('DELETE', path, { key: o.key }), 404, 'not_found', 'agent_not_found');
  });

  it('goes away with its agent', async () => {
    const o = await owner();
    const other = await createAgent(server, o.key);
    await server.request('PUT', agentPath(other), { key: o.key, body: { url: 'https://gate.example.com/agent' } });
    expect((await server.request('DELETE', `/v1/agents/${other}`, { key: o.key })).status).toBe(200);
    expectError(await server.request('GET', agentPath(other), { key: o.key }), 404, 'not_found', 'agent_not_found');
  });
});

describe('missing and malformed URLs', () => {
  const URL_ROUTES = [
    { kind: 'webhook', field: 'url' },
    { kind: 'webhook2', field: 'url' },
    { kind: 'precall', field: 'url' },
    { kind: 'automation', field: 'post_call_url' },
    { kind: 'automation', field: 'in_call_url' },
  ];

  // Automation's "at least one of" is covered above.
  it.each(URL_ROUTES.filter((r) => r.kind !== 'automation'))('$kind: a missing url is missing_field', async ({ kind, field }) => {
    const o = await owner();
    const res = await server.request('PUT', numberPath(kind, o.phone), { key: o.key, body: {} });
    expectError(res, 400, 'invalid_request', 'missing_field');
    expect(res.body.error.details).toEqual({ field });
  });

  it.each(URL_ROUTES)('$kind $field: http, not a URL, credentials and over-long URLs are invalid_url, nothing changed', async ({ kind, field }) => {
    const o = await owner();
    const path = numberPath(kind, o.phone);
    for (const bad of ['http://hooks.example.com/x', 'hooks.example.com/x', '', 'https://user:pw@hooks.example.com/x', `https://hooks.example.com/${'a'.repeat(2030)}`]) {
      const res = await server.request('PUT', path, { key: o.key, body: { [field]: bad } });
      expectError(res, 400, 'invalid_request', kind === 'automation' && bad === '' ? 'missing_field' : 'invalid_url');
      expect(res.body.error.details).toEqual({ field: kind === 'automation' && bad === '' ? 'post_call_url' : field });
    }
    expect((await server.request('GET', path, { key: o.key })).body.is_set).toBe(false);
  });

  it('a url that is not a string is invalid_request naming the field', async () => {
    const o = await owner();
    const res = await server.request('PUT', numberPath('webhook', o.phone), { key: o.key, body: { url: 42 } });
    expectError(res, 400, 'invalid_request', 'invalid_request');
    expect(res.body.error.details).toEqual({ field: 'url' });
  });

  it('http is refused on the agent pre-call and custom functions too', async () => {
    const o = await owner();
    const a = await server.request('PUT', agentPath(o.agentId), { key: o.key, body: { url: 'http://gate.example.com/' } });
    expectError(a, 400, 'invalid_request', 'invalid_url');
    const f = await server.request('POST', `/v1/integrations/custom-functions/number/${enc(o.phone)}`, {
      key: o.key,
      body: { name: 'lookup', url: 'http://tools.example.com/lookup' },
    });
    expectError(f, 400, 'invalid_request', 'invalid_url');
    expect(f.body.error.details).toEqual({ field: 'url' });
  });

  it('allows private targets when ALLOW_PRIVATE_NETWORK_TARGETS is true', async () => {
    const o = await owner();
    for (const url of ['https://localhost:8443/hook', 'https://127.0.0.1/hook', 'https://10.0.0.5/hook', 'https://[::1]/hook']) {
      const res = await server.request('PUT', numberPath('webhook', o.phone), { key: o.key, body: { url } });
      expect(res.status).toBe(200);
      expect(res.body.webhook_url).toBe(url);
    }
  });
});

describe('private targets with ALLOW_PRIVATE_NETWORK_TARGETS=false', () => {
  const PRIVATE = [
    'https://127.0.0.1/hook',
    'https://localhost/hook',
    'https://10.0.0.5/hook',
    'https://172.16.4.4/hook',
    'https://192.168.1.1/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://100.64.0.1/hook',
    'https://0.0.0.0/hook',
    'https://[::1]/hook',
    'https://[fd00::1]/hook',
    'https://[fe80::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://2130706433/hook',
    // Special-purpose ranges (issue 18): documentation, benchmarking, IETF protocol
    // assignments, the IPv4-translated IPv6 form. A connection had been made to each.
    'https://192.0.2.2:18443/',
    'https://192.0.2.1/hook',
    'https://198.18.0.1/hook',
    'https://192.0.0.170/hook',
    'https://[::ffff:0:127.0.0.1]/hook',
  ];

  it('refuses each with invalid_url on every URL route, and keeps the earlier setting', async () => {
    const o = await owner(strict);
    const routes: Array<{ path: string; field: string; method: string; read: string; readField: string; base?: Record<string, unknown> }> = [
      { path: numberPath('webhook', o.phone), field: 'url', method: 'PUT', read: numberPath('webhook', o.phone), readField: 'webhook_url' },
      { path: numberPath('webhook2', o.phone), field: 'url', method: 'PUT', read: numberPath('webhook2', o.phone), readField: 'webhook_url_2' },
      { path: numberPath('precall', o.phone), field: 'url', method: 'PUT', read: numberPath('precall', o.phone), readField: 'url' },
      { path: agentPath(o.agentId), field: 'url', method: 'PUT', read: agentPath(o.agentId), readField: 'url' },
      { path: numberPath('automation', o.phone), field: 'post_call_url', method: 'PUT', read: numberPath('automation', o.phone), readField: 'post_call_url' },
      { path: numberPath('automation', o.phone), field: 'in_call_url', method: 'PUT', read: numberPath('automation', o.phone), readField: 'in_call_url' },
    ];
    const PUBLIC = 'https://93.184.216.34/hook';
    for (const r of routes) {
      const ok = await strict.request(r.method, r.path, { key: o.key, body: { [r.field]: PUBLIC } });
      expect(ok.status).toBe(200);
      for (const url of PRIVATE) {
        const res = await strict.request(r.method, r.path, { key: o.key, body: { [r.field]: url } });
        expectError(res, 400, 'invalid_request', 'invalid_url');
        expect(res.body.error.details).toEqual({ field: r.field });
        expect(res.body.error.message).toMatch(/public hosts/);
      }
      expect((await strict.request('GET', r.read, { key: o.key })).body[r.readField]).toBe(PUBLIC);
    }
  });

  it('refuses them for custom functions, creating nothing', async () => {
    const o = await owner(strict);
    const path = `/v1/integrations/custom-functions/number/${enc(o.phone)}`;
    for (const url of PRIVATE) {
      const res = await strict.request('POST', path, { key: o.key, body: { name: 'lookup', url } });
      expectError(res, 400, 'invalid_request', 'invalid_url');
      expect(res.body.error.details).toEqual({ field: 'url' });
    }
    expect((await strict.request('GET', path, { key: o.key })).body).toEqual({ functions: [], count: 0 });
    const ok = await strict.request('POST', path, { key: o.key, body: { name: 'lookup', url: 'https://93.184.216.34/lookup' } });
    expect(ok.status).toBe(201);
  });

  it('refuses a host that does not resolve', async () => {
    const o = await owner(strict);
    const res = await strict.request('PUT', numberPath('webhook', o.phone), { key: o.key, body: { url: 'https://no-such-host.invalid/hook' } });
    expectError(res, 400, 'invalid_request', 'invalid_url');
    expect(res.body.error.message).toMatch(/does not resolve/);
  });
});

describe('CRM', () => {
  it('needs pit and location_id (blank counts as missing); calendar_id is optional', async () => {
    const o = await owner();
    const path = numberPath('crm', o.phone);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ location_id: 'loc_1' }, 'pit'],
      [{ pit: '   ', location_id: 'loc_1' }, 'pit'],
      [{ pit: 'tok' }, 'location_id'],
      [{ pit: 'tok', location_id: '' }, 'location_id'],
    ];
    for (const [body, field] of cases) {
      const res = await server.request('PUT', path, { key: o.key, body });
      expectError(res, 400, 'invalid_request', 'missing_field');
      expect(res.body.error.details).toEqual({ field });
    }
    expect((await server.request('GET', path, { key: o.key })).body.is_set).toBe(false);
    const put = await server.request('PUT', path, { key: o.key, body: { pit: 'tok', location_id: 'loc_1' } });
    expect(put.body).toEqual({ phone_number: o.phone, location_id: 'loc_1', calendar_id: null, is_set: true });
  });

  it('never returns the token and never stores it in clear', async () => {
    const o = await owner();
    const path = numberPath('crm', o.phone);
    const tokens = [`pit-${'7'.repeat(12)}-first-token-value`, `pit-${'9'.repeat(12)}-second-token-value`];
    const texts: string[] = [];
    for (const [i, pit] of tokens.entries()) {
      // Through the idempotency store too: stored replies must not hold the token in clear.
      const put = await server.request('PUT', path, { key: o.key, body: { pit, location_id: 'loc_77' }, headers: { 'idempotency-key': `crm-${i}` } });
      expect(put.status).toBe(200);
      expect(put.body).not.toHaveProperty('pit');
      texts.push(put.text, (await server.request('GET', path, { key: o.key })).text);
    }
    // A rejected body must not echo the token in its error either.
    texts.push((await server.request('PUT', path, { key: o.key, body: { pit: tokens[0], location_id: 'loc_77', extra: 1 } })).text);
    texts.push((await server.request('GET', '/v1/openapi.json')).text);
    for (const t of texts) for (const pit of tokens) expect(t).not.toContain(pit);

    const files = ['switchboard.db', 'switchboard.db-wal'].map((f) => join(server.dataDir, f)).filter(existsSync);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const bytes = readFileSync(f);
      for (const pit of tokens) expect(bytes.includes(Buffer.from(pit))).toBe(false);
    }
    // The plain settings are there, so the search above looks in the right place.
    expect(files.some((f) => readFileSync(f).includes(Buffer.from('loc_77')))).toBe(true);

    const del = await server.request('DELETE', path, { key: o.key });
    expect(del.body).toEqual({ phone_number: o.phone, deleted: true });
  });
});
