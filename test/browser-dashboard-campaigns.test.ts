// The dashboard's campaign progress in a real browser (headless Chromium of
// @sparticuz/chromium, test/helpers/binaries.ts, driven by playwright-core): an SMS
// campaign (a draft, 10 recipients, one text per 300 ms) and a batch call campaign
// (scheduled far ahead, 4 recipients whose lines are busy, one call at a time) are created
// through the API; the dashboard is opened on its Campaigns tab and shows both at 0; both
// are then launched through the API. Each card's <progress> and data-done move through
// intermediate values to the total, and after the list was read the page made no HTTP
// request at all: the progress came over the live machine view's websocket, not by polling.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumShipped, shippedChromium } from './helpers/binaries.ts';
import { newCustomer, startCallStack, type CallStack, type Customer } from './helpers/calls.ts';
import { campaignDone, createCampaign, launchCampaign, phoneSequence, SMS_ENV } from './helpers/sms.ts';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const skip = !chromiumShipped() && !process.env['CI'];
const SMS_RECIPIENTS = 10;
const BATCH_RECIPIENTS = 4;
/** Generous: the carriers' simulators and the browser share two loaded cores. */
const SETTLE_MS = 20_000;

describe.skipIf(skip)('the dashboard’s campaign cards in headless Chromium', () => {
  let stack: CallStack;
  let browser: Browser;
  let page: Page;
  let tmp: string;
  let c: Customer;
  /** Console errors and page errors: a CSP violation or a script error shows here. */
  const problems: string[] = [];
  /** Every HTTP request the page makes (the websocket's handshake is not one of them). */
  const requests: string[] = [];

  beforeAll(async () => {
    stack = await startCallStack({ ...SMS_ENV, SMS_SEND_INTERVAL_MS: '300' });
    c = await newCustomer(stack, 'twilio');
    tmp = mkdtempSync(join(tmpdir(), 'switchboard-dashboard-'));
    const { chromium } = await import('playwright-core');
    const shipped = shippedChromium();
    browser = await chromium.launch({ executablePath: shipped.executablePath, env: { ...process.env, ...shipped.env }, headless: true, args: ARGS });
    page = await (await browser.newContext({ viewport: { width: 1100, height: 760 } })).newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('request', (r) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    await stack?.close();
  });

  it('a draft SMS campaign and a scheduled batch campaign, launched while the page shows them, move live to done without a single request', async () => {
    const phone = phoneSequence(7);
    const sms = await createCampaign(stack, c, { schedule_type: 'draft', recipients: Array.from({ length: SMS_RECIPIENTS }, () => ({ phone: phone() })) });
    expect(sms.status, sms.text).toBe(201);
    expect(sms.body).toMatchObject({ status: 'draft', total_count: SMS_RECIPIENTS });
    const smsId = sms.body.campaign_id as string;

    // Every far end is busy: each call ends at once as failed, one at a time.
    const callees = Array.from({ length: BATCH_RECIPIENTS }, (_, i) => `+14155557${String(100 + i)}`);
    for (const n of callees) stack.sims.twilio.scenario(n, 'busy');
    const batch = await stack.server.request('POST', '/v1/calls/batch', {
      key: c.key,
      body: { agent_id: c.agentId, from_number: c.number, prompt: 'Remind them of tomorrow’s appointment.', recipients: callees.map((p) => ({ phone: p })), max_concurrent: 1, schedule_type: 'schedule', scheduled_date: '2099-01-05' },
    });
    expect(batch.status, batch.text).toBe(201);
    expect(batch.body).toMatchObject({ status: 'scheduled', valid_count: BATCH_RECIPIENTS });
    const batchId = batch.body.campaign_id as string;

    // Signed in, the live view open, then the Campaigns tab: both cards at 0.
    expect((await page.goto(`${stack.server.url}/dashboard`))?.status()).toBe(200);
    await page.fill('#key', c.key);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#status[data-state="open"]', { timeout: 10_000 });
    await page.waitForSelector('#live[data-state="live"]', { timeout: 10_000 });
    await page.click('nav button[data-tab="campaigns"]');
    const smsCard = `#sms-campaigns .campaign[data-campaign-id="${smsId}"]`;
    const batchCard = `#batch-campaigns .campaign[data-campaign-id="${batchId}"]`;
    await page.waitForSelector(`${smsCard}[data-done="0"]`, { timeout: 10_000 });
    await page.waitForSelector(`${batchCard}[data-done="0"]`, { timeout: 10_000 });
    expect(await page.textContent(`${smsCard} .state`)).toBe('draft');
    expect(await page.textContent(`${batchCard} .state`)).toBe('scheduled');
    // Every value each card's data-done and <progress> take from here on, in order.
    await page.evaluate(() => {
      const seen: Record<string, string[]> = {};
      (window as any).seenDone = seen;
      new MutationObserver((records) => {
        for (const r of records) {
          const card = r.target as HTMLElement;
          const bar = card.querySelector('progress')!;
          (seen[card.dataset['campaignId']!] ??= []).push(`${card.dataset['done']}/${bar.value}/${bar.max}`);
        }
      }).observe(document.body, { subtree: true, attributeFilter: ['data-done'] });
    });
    const sinceList = requests.length;

    const launched = await launchCampaign(stack, c.key, smsId);
    expect(launched.status, launched.text).toBe(200);
    const launchedBatch = await stack.server.request('POST', `/v1/calls/batch/${batchId}/launch`, { key: c.key });
    expect(launchedBatch.status, launchedBatch.text).toBe(200);

    await page.waitForSelector(`${smsCard}[data-done="${SMS_RECIPIENTS}"]`, { timeout: SETTLE_MS });
    await page.waitForSelector(`${batchCard}[data-done="${BATCH_RECIPIENTS}"]`, { timeout: SETTLE_MS });
    // The API agrees (read from here, not by the page).
    expect(await campaignDone(stack, c.key, smsId)).toMatchObject({ status: 'done', delivered_count: SMS_RECIPIENTS, pending_count: 0 });
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'done', `${smsCard} .state`, { timeout: 5000 });

    const seen = (await page.evaluate(() => (window as any).seenDone)) as Record<string, string[]>;
    const progression = (id: string, total: number): number[] => {
      const values = (seen[id] ?? []).map((s) => {
        const [done, value, max] = s.split('/').map(Number);
        // The bar shows what data-done says, out of the campaign's total.
        expect(value, s).toBe(done);
        expect(max, s).toBe(total);
        return done!;
      });
      // Never backwards, ending at the total.
      for (let i = 1; i < values.length; i++) expect(values[i], values.join(',')).toBeGreaterThanOrEqual(values[i - 1]!);
      expect(values.at(-1)).toBe(total);
      return [...new Set(values)].filter((v) => v > 0 && v < total);
    };
    // One text per 300 ms: the card passes through most of the counts in between.
    expect(progression(smsId, SMS_RECIPIENTS).length, JSON.stringify(seen[smsId])).toBeGreaterThanOrEqual(5);
    // One call at a time: at least one count in between.
    expect(progression(batchId, BATCH_RECIPIENTS).length, JSON.stringify(seen[batchId])).toBeGreaterThanOrEqual(1);
    expect(await page.$eval(`${smsCard} progress`, (b) => [(b as HTMLProgressElement).value, (b as HTMLProgressElement).max])).toEqual([SMS_RECIPIENTS, SMS_RECIPIENTS]);

    // Not one HTTP request since the list was read: no polling, no re-read of the lists.
    expect(requests.slice(sinceList)).toEqual([]);
    expect(requests.filter((r) => r.includes('/campaigns') || r.includes('/calls/batch')).sort()).toEqual(['GET /v1/calls/batch', 'GET /v1/sms/campaigns']);
    expect(problems).toEqual([]);
  }, 45_000);

  it('a campaign created while the tab is open is read once more, and its card keeps the live counters that came while that read was slow', async () => {
    const before = requests.length;
    // The SMS list's re-read is held 1.5 s after the server answered: the campaign's
    // snapshots (one text per 300 ms, to its end) all come while the page waits for it.
    let held = 0;
    await page.route((url) => url.pathname === '/v1/sms/campaigns', async (route) => {
      held++;
      const res = await route.fetch();
      await new Promise((r) => setTimeout(r, 1500));
      await route.fulfill({ response: res });
    });
    const phone = phoneSequence(8);
    const sms = await createCampaign(stack, c, { name: 'Late offer', recipients: Array.from({ length: 4 }, () => ({ phone: phone() })) });
    expect(sms.status, sms.text).toBe(201);
    const id = sms.body.campaign_id as string;
    await campaignDone(stack, c.key, id);
    const card = `#sms-campaigns .campaign[data-campaign-id="${id}"]`;
    // The list read before the campaign ended says less than 4; the live counters say 4.
    await page.waitForSelector(`${card}[data-done="4"]`, { timeout: SETTLE_MS });
    expect(await page.textContent(`${card} .state`)).toBe('done');
    await page.unroute((url) => url.pathname === '/v1/sms/campaigns');
    // Its first snapshot named an unknown campaign: the lists were read once more, not at each snapshot.
    expect(held).toBe(1);
    expect(requests.slice(before).sort()).toEqual(['GET /v1/calls/batch', 'GET /v1/sms/campaigns']);
    expect(problems).toEqual([]);
  }, 30_000);
});
