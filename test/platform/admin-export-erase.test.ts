// `export-account` and `erase-account` through the real command line, beside a running
// service with the carrier simulators. The export is one JSON document that agrees with
// what the API shows of each thing (account, agent, number, caller, call with transcript
// and analysis, texts, both kinds of campaign with their recipients) and holds no secret.
// Erasure is refused without --yes and while the account has live work the command cannot
// stop inside the service (a call on the line, a scheduled campaign); once idle it leaves
// no row of the account and no recording file, and its keys stop working. DELETE
// /v1/account, the same erasure, removes recording files too.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../helpers/admin.ts';
import { callReaches, dial, eventually, newCustomer, startCallStack, type CallStack, type Customer } from '../helpers/calls.ts';
import { nextNumber } from '../helpers/fixtures.ts';
import { saveRecording } from '../helpers/recordings.ts';
import { campaignDone, createCampaign, sendDelivered, SMS_ENV } from '../helpers/sms.ts';

let stack: CallStack;
let outDir: string;
beforeAll(async () => {
  stack = await startCallStack(SMS_ENV);
  outDir = mkdtempSync(join(tmpdir(), 'switchboard-export-'));
});
afterAll(async () => {
  await stack.close();
  rmSync(outDir, { recursive: true, force: true });
});

const admin = (...args: string[]) => runAdmin(stack.server.dataDir, args, stack.sims.env);
const api = (c: Customer, method: string, path: string, body?: unknown) => stack.server.request(method, path, { key: c.key, body });
const enc = encodeURIComponent;

const BATCH_PROMPT = 'Remind {first_name} of the appointment; the door code is 7731.';
const BATCH_SECRET_VARIABLE = 'member-4417-zeta';
const FAR_DATE = '2099-01-05';
let recipientSeq = 0;
const recipient = (): string => `+1628${3_500_000 + process.pid % 1000 * 100 + ++recipientSeq}`;

/** An account with something in every part of the export; returns what the checks need. */
async function populated() {
  const c = await newCustomer(stack, 'twilio');
  const caller = nextNumber();
  const put = await api(c, 'PUT', `/v1/phone-numbers/${enc(c.number)}/callers/${enc(caller)}`, { name: 'Ana Silva', email: 'ana@example.com', preference: 'evenings' });
  expect(put.status, put.text).toBe(200);
  const webhookSecret = (await api(c, 'GET', '/v1/webhooks/secret')).body.secret as string;
  const text = await sendDelivered(stack, c, recipient(), 'Your table for two is ready.');
  const smsCampaign = await createCampaign(stack, c, { recipients: [{ phone: recipient(), variables: { name: 'Ana' } }] });
  expect(smsCampaign.status, smsCampaign.text).toBe(201);
  await campaignDone(stack, c.key, smsCampaign.body.campaign_id);
  const batch = await api(c, 'POST', '/v1/calls/batch', {
    agent_id: c.agentId,
    from_number: c.number,
    prompt: BATCH_PROMPT,
    schedule_type: 'schedule',
    scheduled_date: FAR_DATE,
    recipients: [{ phone: recipient(), variables: { first_name: BATCH_SECRET_VARIABLE } }, { phone: recipient() }],
  });
  expect(batch.status, batch.text).toBe(201);
  // A finished call with a recording file, its transcript and analysis as post-call writes them.
  const rec = saveRecording(stack.server.storage, stack.server.dataDir, c.accountId, Buffer.from('ID3 not really an mp3'));
  const callId = (stack.server.storage.db.prepare('SELECT call_id FROM calls WHERE account_id = ? AND recording_path IS NOT NULL').get(c.accountId) as { call_id: string }).call_id;
  stack.server.storage.db
    .prepare(`UPDATE calls SET agent_id = ?, transcript = ?, summary = ?, sentiment = 'happy', successful = 1, extracted = '{"party_size":2}', analysis_status = 'done' WHERE call_id = ?`)
    .run(c.agentId, 'Agent: Hello, Luigi’s.\nCaller: A table for two tonight, please.', 'Ana booked a table for two tonight.', callId);
  return { c, caller, webhookSecret, text, smsCampaignId: smsCampaign.body.campaign_id as string, batchId: batch.body.campaign_id as string, callId, recording: rec };
}

/** Every property name anywhere in a JSON value. */
function keysOf(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) keysOf(x, out);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.add(k);
      keysOf(x, out);
    }
  }
  return out;
}

/** The keys of `a` that `b` has too, with `a`'s values. */
const common = (a: Record<string, unknown>, b: Record<string, unknown>) => Object.fromEntries(Object.keys(a).filter((k) => k in b).map((k) => [k, a[k]]));

describe('export-account', () => {
  it('writes one JSON document that agrees with the API and holds no secret', async () => {
    const p = await populated();
    const { c } = p;
    const run = await admin('export-account', c.accountId);
    expect(run.code, run.stderr).toBe(0);
    const doc = run.json();
    expect(doc).toMatchObject({ format: 'switchboard.account-export/1', exported_at: expect.any(String), not_included: expect.stringContaining('carrier credentials') });

    expect(doc.account).toEqual((await api(c, 'GET', '/v1/account')).body);
    const keys = (await api(c, 'GET', '/v1/keys')).body.keys;
    expect(doc.api_keys).toEqual(keys);
    const agent = (await api(c, 'GET', `/v1/agents/${c.agentId}`)).body;
    expect(doc.agents).toHaveLength(1);
    expect(doc.agents[0]).toEqual(common(agent, doc.agents[0]));
    expect(Object.keys(doc.agents[0])).toEqual(expect.arrayContaining(['agent_id', 'name', 'system_prompt', 'voicemail_message', 'created_at']));
    expect(doc.phone_numbers).toEqual([(await api(c, 'GET', `/v1/phone-numbers/${enc(c.number)}`)).body.phone_number]);
    const caller = (await api(c, 'GET', `/v1/phone-numbers/${enc(c.number)}/callers/${enc(p.caller)}`)).body.caller;
    expect(doc.callers).toEqual([expect.objectContaining({ phone_number: c.number, caller_number: p.caller, name: 'Ana Silva', email: 'ana@example.com', preference: 'evenings' })]);
    expect(caller.context).toMatchObject({ name: 'Ana Silva', email: 'ana@example.com', preference: 'evenings' });

    const call = (await api(c, 'GET', `/v1/calls/${p.callId}`)).body;
    const exported = doc.calls.find((x: { call_id: string }) => x.call_id === p.callId);
    expect(exported).toEqual(expect.objectContaining(common(call, exported)));
    expect(exported).toMatchObject({
      transcript: 'Agent: Hello, Luigi’s.\nCaller: A table for two tonight, please.',
      summary: 'Ana booked a table for two tonight.',
      sentiment: 'happy',
      successful: true,
      extracted: { party_size: 2 },
      analysis_status: 'done',
      recording_url: expect.stringContaining(p.recording.link),
    });

    const messages = (await api(c, 'GET', '/v1/sms')).body.messages as { message_id: string; body: string }[];
    expect(doc.sms_messages.map((m: { message_id: string }) => m.message_id).sort()).toEqual(messages.map((m) => m.message_id).sort());
    expect(doc.sms_messages.find((m: { message_id: string }) => m.message_id === p.text.message_id)).toMatchObject({ body: 'Your table for two is ready.', status: 'delivered', direction: 'outbound' });
    expect(doc.sms_campaigns).toEqual([
      expect.objectContaining({ campaign_id: p.smsCampaignId, status: 'done', recipients: [expect.objectContaining({ seq: 0, variables: { name: 'Ana' }, state: 'delivered' })] }),
    ]);
    expect(doc.batch_campaigns).toEqual([expect.objectContaining({ campaign_id: p.batchId, status: 'scheduled', scheduled_date: FAR_DATE, valid_count: 2 })]);
    expect(doc.batch_campaigns[0].recipients).toEqual([
      expect.objectContaining({ seq: 0, state: 'pending', call_id: null }),
      expect.objectContaining({ seq: 1, state: 'pending', call_id: null }),
    ]);

    // No secret, and no sealed value, under any name.
    for (const secret of [c.key.split(':')[1]!, p.webhookSecret, c.carrierSecret, c.carrierAccount, BATCH_PROMPT, BATCH_SECRET_VARIABLE]) {
      expect(run.stdout, secret).not.toContain(secret);
    }
    const names = [...keysOf(doc)];
    for (const field of ['secret_hash', 'credentials', 'webhook_secret', 'webhook_secret_previous', 'secret', 'events_token', 'media_token', 'recording_path', 'internal_id', 'prompt', 'details', 'sealed']) {
      expect(names, field).not.toContain(field);
    }

    // --out: the same document in a file only the operator can read, a summary on stdout.
    const file = join(outDir, `${c.accountId}.json`);
    const written = await admin('export-account', c.accountId, '--out', file);
    expect(written.code, written.stderr).toBe(0);
    expect(written.json()).toMatchObject({ file, account_id: c.accountId, bytes: statSync(file).size, calls: doc.calls.length });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect({ ...JSON.parse(readFileSync(file, 'utf8')), exported_at: null }).toEqual({ ...doc, exported_at: null });
    const again = await admin('export-account', c.accountId, '--out', file);
    expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/exists; pass --force/)]);
    expect((await admin('export-account', c.accountId, '--out', file, '--force')).code).toBe(0);
  });

  it('refuses an account that does not exist (exit 1)', async () => {
    const run = await admin('export-account', 'acct_missing');
    expect([run.code, run.stdout, run.stderr]).toEqual([1, '', expect.stringMatching(/export-account: no account acct_missing/)]);
  });
});

describe('erase-account', () => {
  /** Every row of the account, table by table (tables without account_id through their campaign). */
  function rowsOf(accountId: string, campaignIds: string[]): Record<string, number> {
    const db = stack.server.storage.db;
    const out: Record<string, number> = {};
    const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all();
    for (const { name } of tables) {
      const cols = (db.prepare(`PRAGMA table_info("${name}")`).all() as { name: string }[]).map((x) => x.name);
      if (cols.includes('account_id')) out[name] = (db.prepare(`SELECT COUNT(*) AS n FROM "${name}" WHERE account_id = ?`).get(accountId) as { n: number }).n;
    }
    out['accounts'] = (db.prepare('SELECT COUNT(*) AS n FROM accounts WHERE id = ?').get(accountId) as { n: number }).n;
    out['idempotency_keys'] = (db.prepare('SELECT COUNT(*) AS n FROM idempotency_keys WHERE scope = ?').get(accountId) as { n: number }).n;
    const marks = campaignIds.map(() => '?').join(', ');
    out['sms_recipients'] = (db.prepare(`SELECT COUNT(*) AS n FROM sms_recipients WHERE campaign_id IN (${marks})`).get(...campaignIds) as { n: number }).n;
    return out;
  }

  it('is refused without --yes, and while a call is live or a campaign is scheduled; once idle it leaves nothing of the account', async () => {
    const p = await populated();
    const { c } = p;
    // An idempotent request leaves a stored answer under the account's scope.
    expect((await stack.server.request('POST', '/v1/agents', { key: c.key, body: { name: 'Second' }, headers: { 'Idempotency-Key': 'erase-me' } })).status).toBe(201);
    const before = rowsOf(c.accountId, [p.smsCampaignId]);
    for (const table of ['accounts', 'api_keys', 'agents', 'phone_numbers', 'callers', 'calls', 'sms_messages', 'batch_campaigns', 'sms_campaigns', 'sms_recipients', 'idempotency_keys']) {
      expect(before[table], table).toBeGreaterThan(0);
    }

    const noYes = await admin('erase-account', c.accountId);
    expect([noYes.code, noYes.stderr]).toEqual([1, expect.stringMatching(/refusing without --yes/)]);
    expect(rowsOf(c.accountId, [p.smsCampaignId])).toEqual(before);

    const { call_id } = await dial(stack.server, c, nextNumber());
    await callReaches(stack.server, c.key, call_id, 'in-progress');
    const live = await admin('erase-account', c.accountId, '--yes');
    expect(live.code).toBe(1);
    expect(live.stderr).toMatch(/1 live call actor\(s\), 1 live (campaign|batch)[^,]* actor\(s\).*DELETE \/v1\/account\?confirm=true/);
    await stack.sims.twilio.hangup(call_id);
    await callReaches(stack.server, c.key, call_id, 'completed');
    const scheduled = await admin('erase-account', c.accountId, '--yes');
    expect(scheduled.code).toBe(1);
    expect(scheduled.stderr).not.toMatch(/call actor/);
    expect((await api(c, 'GET', '/v1/account')).status).toBe(200);
    expect(existsSync(p.recording.file)).toBe(true);

    expect((await api(c, 'DELETE', `/v1/calls/batch/${p.batchId}`)).status).toBe(200);
    await eventually(async () => ((await admin('erase-account', c.accountId, '--yes')).code === 0 ? true : undefined), 10_000, 'the erasure once the campaign is cancelled', 200);
    expect(Object.entries(rowsOf(c.accountId, [p.smsCampaignId])).filter(([, n]) => n > 0)).toEqual([]);
    expect(existsSync(p.recording.file)).toBe(false);
    await eventually(async () => ((await api(c, 'GET', '/v1/account')).status === 401 ? true : undefined), 3000, 'the erased account’s key refused', 50);

    const gone = await admin('erase-account', c.accountId, '--yes');
    expect([gone.code, gone.stderr]).toEqual([1, expect.stringMatching(/no account/)]);
  }, 60_000);

  it('prints what it erased, and --force erases an account a stopped service left with unfinished work', async () => {
    const c = await newCustomer(stack, 'twilio');
    const rec = saveRecording(stack.server.storage, stack.server.dataDir, c.accountId, Buffer.from('ID3 x'));
    // A snapshot the service never finished (as after a crash); no actor of it is live in this process.
    stack.server.storage.snapshots.save({ actorId: 'call_stale', accountId: c.accountId, kind: 'call', snapshot: {}, done: false, now: Date.now() });
    const refused = await admin('erase-account', c.accountId, '--yes');
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/1 live call actor\(s\).*--force/)]);
    const forced = await admin('erase-account', c.accountId, '--yes', '--force');
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.json()).toEqual({ account_id: c.accountId, erased: true, calls: 1, recordings: 1, sms_messages: 0, bucket_deletes_queued: 0 });
    expect(existsSync(rec.file)).toBe(false);
    expect(stack.server.storage.db.prepare('SELECT COUNT(*) AS n FROM actor_snapshots WHERE account_id = ?').get(c.accountId)).toEqual({ n: 0 });
  });

  it('DELETE /v1/account, the same erasure, removes the account’s recording files', async () => {
    const c = await newCustomer(stack, 'twilio');
    const rec = saveRecording(stack.server.storage, stack.server.dataDir, c.accountId, Buffer.from('ID3 y'));
    expect((await api(c, 'DELETE', '/v1/account?confirm=true')).status).toBe(200);
    expect(existsSync(rec.file)).toBe(false);
    expect(stack.server.storage.db.prepare('SELECT COUNT(*) AS n FROM calls WHERE account_id = ?').get(c.accountId)).toEqual({ n: 0 });
  });
});
