// One HTTP tool call against a real HTTPS receiver on loopback (a throwaway CA, trusted
// through an https agent): the body and signature the endpoint gets, and every way a
// call can fail turned into words for the model: an error status, a timeout, an answer
// over 32 KB, arguments that are not JSON, and a loopback address without
// ALLOW_PRIVATE_NETWORK_TARGETS (an IP literal, and a name that resolves to one).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { agentTrusting, makeTestCa, startWebhookReceiver, type TestCa, type WebhookReceiver } from '../../test/sim/webhook-receiver.ts';
import { newWebhookSecret } from '../../storage/integrations.ts';
import { runHttpTool, TOOL_MAX_ANSWER_BYTES, type ToolRunDeps } from './tool-runner.ts';

let ca: TestCa;
let receiver: WebhookReceiver;
const secret = newWebhookSecret();
let deps: ToolRunDeps;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
  deps = { allowPrivate: true, secretsOf: () => [secret], clock: Date.now, agent: agentTrusting(ca) };
});
afterAll(async () => {
  await receiver?.close();
  ca?.dispose();
});

let n = 0;
const call = (path: string, args = '{"order_id":"42"}') => ({ url: receiver.url(path), accountId: 'acct_1', callId: 'CA123', agentId: 'agent_1', name: 'lookup_order', arguments: args });

describe('runHttpTool', () => {
  it('POSTs {call_id, agent_id, name, arguments}, signed, and gives the JSON answer back compacted', async () => {
    const path = `/ok-${++n}`;
    receiver.script(path, { status: 200, headers: { 'content-type': 'application/json' }, body: '{ "status": "shipped" }' });
    expect(await runHttpTool(deps, call(path))).toEqual({ ok: true, result: '{"status":"shipped"}', status: 200 });
    const [req] = receiver.to(path);
    expect(JSON.parse(req!.body)).toEqual({ call_id: 'CA123', agent_id: 'agent_1', name: 'lookup_order', arguments: { order_id: '42' } });
    expect(new Webhook(secret).verify(req!.body, req!.headers)).toBeTruthy();
  });

  it('an empty answer is {"ok":true}; a text answer is passed on as {"answer": …}', async () => {
    const a = `/empty-${++n}`;
    const b = `/text-${++n}`;
    receiver.script(a, { status: 204, body: '' });
    receiver.script(b, { status: 200, body: 'Accepted' });
    expect(await runHttpTool(deps, call(a))).toMatchObject({ ok: true, result: '{"ok":true}' });
    expect(await runHttpTool(deps, call(b))).toMatchObject({ ok: true, result: '{"answer":"Accepted"}' });
  });

  it('no arguments at all are {}; arguments that are not a JSON object are refused without a request', async () => {
    const path = `/args-${++n}`;
    expect(await runHttpTool(deps, call(path, ''))).toMatchObject({ ok: true });
    expect(JSON.parse(receiver.to(path)[0]!.body).arguments).toEqual({});
    const bad = `/bad-${++n}`;
    expect(await runHttpTool(deps, call(bad, '{"order_id": 4'))).toMatchObject({ ok: false, kind: 'bad_arguments' });
    expect(await runHttpTool(deps, call(bad, '[1]'))).toMatchObject({ ok: false, kind: 'bad_arguments' });
    expect(receiver.to(bad)).toEqual([]);
  });

  it('an error status, a timeout and an answer over 32 KB are told to the model', async () => {
    const status = `/500-${++n}`;
    const slow = `/slow-${++n}`;
    const big = `/big-${++n}`;
    receiver.script(status, { status: 503, body: 'down' });
    receiver.script(slow, { status: 200, delayMs: 2000, body: '{}' });
    receiver.script(big, { status: 200, body: JSON.stringify({ blob: 'x'.repeat(TOOL_MAX_ANSWER_BYTES) }) });
    expect(await runHttpTool(deps, call(status))).toEqual({ ok: false, kind: 'status', status: 503, error: 'the tool answered with an error (HTTP 503)' });
    const started = Date.now();
    expect(await runHttpTool({ ...deps, timeoutMs: 300 }, call(slow))).toMatchObject({ ok: false, kind: 'timeout', error: 'the tool did not answer within 1 second' });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(await runHttpTool(deps, call(big))).toMatchObject({ ok: false, kind: 'too_large', error: "the tool's answer was larger than 32 KB" });
  });

  it('without private targets allowed, a loopback address is refused at connect, literal or resolved', async () => {
    const path = `/private-${++n}`;
    const strict = { ...deps, allowPrivate: false };
    expect(await runHttpTool(strict, call(path))).toMatchObject({ ok: false, kind: 'refused_address' });
    expect(await runHttpTool(strict, { ...call(path), url: receiver.url(path, 'localhost') })).toMatchObject({ ok: false, kind: 'refused_address' });
    expect(receiver.to(path)).toEqual([]);
  });

  it('only https', async () => {
    expect(await runHttpTool(deps, { ...call('/x'), url: 'http://127.0.0.1:9/x' })).toMatchObject({ ok: false, kind: 'invalid_url' });
  });
});
