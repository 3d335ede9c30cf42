// requestTarget against a real HTTPS server on loopback (a throwaway CA, trusted through
// an https agent with `ca`): the address is judged where the socket connects (a name that
// resolves to 127.0.0.1 is refused without the allow flag, before any byte is sent), the
// deadline covers the whole exchange, the answer is read up to its bound, and a redirect
// is returned, not followed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentTrusting, makeTestCa, startWebhookReceiver, type TestCa, type WebhookReceiver } from '../test/sim/webhook-receiver.ts';
import { requestTarget, TargetRequestError } from './target-request.ts';

let ca: TestCa;
let receiver: WebhookReceiver;
beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startWebhookReceiver(ca);
});
afterAll(async () => {
  await receiver?.close();
  ca?.dispose();
});

const send = (url: string, opts: Partial<Parameters<typeof requestTarget>[1]> = {}) =>
  requestTarget(url, { body: '{"a":1}', timeoutMs: 2000, maxResponseBytes: 1024, allowPrivate: true, agent: agentTrusting(ca), ...opts });

const failure = async (p: Promise<unknown>): Promise<TargetRequestError> => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TargetRequestError);
  return err as TargetRequestError;
};

describe('requestTarget', () => {
  it('posts the body with its headers and returns the answer', async () => {
    receiver.script('/ok', { status: 201, body: 'fine' });
    const res = await send(receiver.url('/ok'), { headers: { 'content-type': 'application/json', 'x-test': 'yes' } });
    expect(res).toMatchObject({ status: 201, truncated: false });
    expect(res.body.toString()).toBe('fine');
    const [got] = receiver.to('/ok');
    expect(got).toMatchObject({ body: '{"a":1}' });
    expect(got!.headers['x-test']).toBe('yes');
  });

  it.each([
    ['a name resolving to loopback', 'localhost'],
    ['a loopback literal', '127.0.0.1'],
  ])('refuses %s without ALLOW_PRIVATE_NETWORK_TARGETS, sending nothing', async (_what, host) => {
    const path = `/refused-${host}`;
    const err = await failure(send(receiver.url(path, host), { allowPrivate: false }));
    expect(err.kind).toBe('refused_address');
    expect(err.message).toMatch(/loopback/);
    expect(receiver.to(path)).toHaveLength(0);
    // Allowed, the same URL is reached.
    expect((await send(receiver.url(path, host))).status).toBe(200);
  });

  it('refuses http and URLs with credentials', async () => {
    expect((await failure(send(`http://127.0.0.1:${receiver.port}/x`))).kind).toBe('invalid_url');
    expect((await failure(send(`https://u:p@127.0.0.1:${receiver.port}/x`))).kind).toBe('invalid_url');
  });

  it('times out the whole exchange', async () => {
    receiver.script('/slow', { status: 200, delayMs: 1500 });
    const started = Date.now();
    const err = await failure(send(receiver.url('/slow'), { timeoutMs: 300 }));
    expect(err.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(1200);
  });

  it('reads at most maxResponseBytes: an error by default, the first bytes with truncate', async () => {
    receiver.script('/big', { status: 200, body: 'x'.repeat(5000) }, { status: 200, body: 'y'.repeat(5000) });
    const err = await failure(send(receiver.url('/big'), { maxResponseBytes: 100 }));
    expect(err).toMatchObject({ kind: 'too_large', status: 200 });
    const cut = await send(receiver.url('/big'), { maxResponseBytes: 100, oversize: 'truncate' });
    expect(cut).toMatchObject({ status: 200, truncated: true });
    expect(cut.body.toString()).toBe('y'.repeat(100));
  });

  it('returns a redirect as it is, never following it', async () => {
    receiver.script('/moved', { status: 302, headers: { location: receiver.url('/elsewhere') } });
    const res = await send(receiver.url('/moved'));
    expect(res.status).toBe(302);
    await new Promise((r) => setTimeout(r, 100));
    expect(receiver.to('/elsewhere')).toHaveLength(0);
  });

  it('a cut connection is a connection failure', async () => {
    receiver.script('/cut', 'destroy');
    expect((await failure(send(receiver.url('/cut')))).kind).toBe('connection_failed');
  });
});

describe('requestTarget aborted', () => {
  it('before it began sends nothing and rejects, with no stray socket error later', async () => {
    const stray: unknown[] = [];
    const onUncaught = (e: unknown) => stray.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      receiver.script('/never', { status: 200 });
      const ctl = new AbortController();
      ctl.abort();
      expect((await failure(send(receiver.url('/never'), { signal: ctl.signal }))).kind).toBe('connection_failed');
      await new Promise((r) => setTimeout(r, 200));
      expect(receiver.to('/never')).toHaveLength(0);
      expect(stray).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
