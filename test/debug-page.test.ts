// The live machine view's page, `GET /debug`, in a real browser: the headless Chromium
// that the devDependency @sparticuz/chromium ships (test/helpers/binaries.ts), driven by
// playwright-core. The test pastes a key, places a call through the carrier simulator
// and waits until the page has shown every state of it, in order, as it happened; then
// saves a screenshot to test-output/. It needs nothing installed on the machine. It is
// skipped only on a platform the package has no Chromium for (it ships Linux x64), and
// never in CI: there, as everywhere else, a browser that does not start fails the suite.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumShipped, shippedChromium } from './helpers/binaries.ts';
import { nextNumber } from './helpers/fixtures.ts';
import { callReaches, dial, newCustomer, startCallStack, type CallStack, type Customer } from './helpers/calls.ts';

// As root Chromium needs --no-sandbox. The rest keep it off this machine's closed
// network: without them it tries Google's hosts at every start.
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const OUTPUT = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'test-output');
const skip = !chromiumShipped() && !process.env['CI'];

describe.skipIf(skip)('the /debug page in headless Chromium', () => {
  let stack: CallStack;
  let context: BrowserContext;
  let page: Page;
  let userDataDir: string;
  let c: Customer;
  /** Console errors and page errors: a CSP violation or a script error shows here. */
  const problems: string[] = [];

  beforeAll(async () => {
    stack = await startCallStack();
    c = await newCustomer(stack, 'twilio');
    const { chromium } = await import('playwright-core');
    const browser = shippedChromium();
    userDataDir = mkdtempSync(join(tmpdir(), 'switchboard-chromium-profile-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: browser.executablePath,
      env: { ...process.env, ...browser.env },
      headless: true,
      args: ARGS,
      viewport: { width: 1100, height: 720 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await stack?.close();
  });

  it('takes a key, then shows a call’s states and transitions live, in order', async () => {
    const res = await page.goto(`${stack.server.url}/debug`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("default-src 'none'");
    await page.fill('#key', c.key);
    await page.click('button[type=submit]');
    await page.waitForSelector('#status[data-state="open"]', { timeout: 5000 });
    // The key is kept in the tab, never in the URL.
    expect(page.url()).toBe(`${stack.server.url}/debug`);
    expect(await page.evaluate(() => sessionStorage.getItem('switchboard.debug.key'))).toBe(c.key);

    const created = await dial(stack.server, c, nextNumber());
    await callReaches(stack.server, c.key, created.call_id, 'in-progress');
    // Live: the page shows the call on the line while it is.
    await page.waitForSelector('section.actor[data-state^="in-progress"]', { timeout: 5000 });
    await stack.sims.twilio.hangup(created.call_id);
    await callReaches(stack.server, c.key, created.call_id, 'completed');
    await page.waitForSelector('section.actor[data-status="done"]', { timeout: 5000 });

    const shown = await page.$$eval('section.actor li', (lis) => lis.map((li) => ({ event: (li as HTMLElement).dataset['event'], state: (li as HTMLElement).dataset['state'] })));
    const states: string[] = [];
    for (const { state } of shown) {
      const top = state!.split('.')[0]!;
      if (states.at(-1) !== top) states.push(top);
    }
    // The carrier's ringing webhook may overtake the dial's answer: `initiated` can be skipped.
    expect(states.filter((s) => s !== 'initiated')).toEqual(['dialing', 'ringing', 'in-progress', 'post-call', 'done']);
    expect(shown.map((s) => s.event)).toEqual(expect.arrayContaining(['CARRIER.RINGING', 'CARRIER.ANSWERED', 'CARRIER.ENDED']));
    const text = await page.textContent('#actors');
    expect(text).toContain('CARRIER.RINGING → ringing');
    expect(text).not.toContain(c.number);

    mkdirSync(OUTPUT, { recursive: true });
    const shot = join(OUTPUT, 'debug-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);
    expect(problems).toEqual([]);
  }, 60_000);

  it('renders what it is sent as text, never as markup', async () => {
    const evil = '<img src=x id=injected onerror="document.title=1">';
    stack.server.inspection.publish(c.accountId, {
      type: '@xstate.snapshot',
      kind: '<b>kind</b>',
      actorId: `call_${evil}`,
      seq: 1,
      at: Date.now(),
      event: { type: evil },
      snapshot: { value: { [evil]: evil }, tags: [evil], status: 'active', counters: { placed: 2, [evil]: 1 } },
    });
    await page.waitForFunction(() => document.querySelectorAll('section.actor').length === 2, undefined, { timeout: 5000 });
    expect(await page.$('#injected')).toBeNull();
    expect(await page.$('section.actor b')).toBeNull();
    expect(await page.textContent('#actors')).toContain(evil);
    expect(problems).toEqual([]);
  }, 30_000);

  it('is right that browsers refuse ":" in a subprotocol, so the page sends bearer.KEY_ID.KEY_SECRET', async () => {
    const outcome = await page.evaluate(() => {
      try {
        new WebSocket(`ws://${location.host}/v1/debug/actors/ws`, ['bearer.key_a:sk_b']).close();
        return 'accepted';
      } catch (e) {
        return (e as Error).name;
      }
    });
    expect(outcome).toBe('SyntaxError');
  });

  it('says so when the key is wrong', async () => {
    await page.fill('#key', `${c.key.split(':')[0]}:sk_${'x'.repeat(61)}`);
    await page.click('button[type=submit]');
    await page.waitForSelector('#status[data-state="closed"]', { timeout: 5000 });
    expect(await page.textContent('#status')).toContain('check the key');
    // A refused upgrade is logged by the browser as a failed connection: expected here.
    problems.length = 0;
  }, 30_000);
});
