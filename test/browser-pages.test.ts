// The playground and the dashboard in a real browser (issue 22, acceptance 2): the
// headless Chromium of @sparticuz/chromium (test/helpers/binaries.ts) driven by
// playwright-core, with a fake microphone that plays a real speech fixture (a WAV made
// here from the fixture's μ-law: 5 s of silence, the sentence, then silence). Against the
// provider simulators, the playground places a web call: the agent's greeting comes back
// as audio the page's AudioWorklet plays (its energy is measured in the page) and as a
// caption, and the caller's sentence is captioned; the page hangs up. The dashboard then
// shows that call, its transcript, and plays its recording. Screenshots of both pages go
// to test-output/.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumShipped, shippedChromium } from './helpers/binaries.ts';
import { createAgent } from './helpers/fixtures.ts';
import { importNumber } from './helpers/calls.ts';
import { recordWhere, startConversationStack, type ConversationStack } from './helpers/conversation.ts';
import { fixturePcm16 } from './helpers/web-call.ts';
import { speechFixture } from './fixtures/speech/speech.ts';

const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', '--autoplay-policy=no-user-gesture-required',
];
const OUTPUT = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'test-output');
const skip = !chromiumShipped() && !process.env['CI'];
const SENTENCE = speechFixture('book-table').text;
const GREETING = 'Hello, this is the web agent.';

/** 16-bit PCM mono WAV at 16 kHz: `leadMs` of silence, the fixture, `tailMs` of silence. */
function speechWav(path: string, leadMs: number, tailMs: number): void {
  const speech = fixturePcm16('book-table');
  const data = Buffer.concat([Buffer.alloc(leadMs * 32), Buffer.from(speech), Buffer.alloc(tailMs * 32)]);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(16000, 24);
  header.writeUInt32LE(32000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  writeFileSync(path, Buffer.concat([header, data]));
}

describe.skipIf(skip)('the playground and the dashboard in headless Chromium', () => {
  let stack: ConversationStack;
  let context: BrowserContext;
  let page: Page;
  let tmp: string;
  let key: string;
  let accountId: string;
  let agentId: string;
  let callId: string;
  /** Console errors and page errors: a CSP violation or a script error shows here. */
  const problems: string[] = [];

  beforeAll(async () => {
    // Private targets allowed: the webhook test goes to a closed loopback port.
    stack = await startConversationStack({ ALLOW_PRIVATE_NETWORK_TARGETS: 'true' });
    ({ key, accountId } = await stack.server.newAccount());
    agentId = await createAgent(stack.server, key, {
      name: 'Front desk',
      welcome_message: GREETING,
      response_eagerness: 200,
      record_call: true,
      recording_source: 'platform',
    });
    tmp = mkdtempSync(join(tmpdir(), 'switchboard-pages-'));
    const wav = join(tmp, 'caller.wav');
    speechWav(wav, 5000, 30_000);
    const { chromium } = await import('playwright-core');
    const browser = shippedChromium();
    context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
      executablePath: browser.executablePath,
      env: { ...process.env, ...browser.env },
      headless: true,
      args: [...ARGS, `--use-file-for-fake-audio-capture=${wav}%noloop`],
      viewport: { width: 1100, height: 760 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    await stack?.close();
  });

  it('the playground calls the agent: the greeting is heard and captioned, the caller’s sentence captioned, then it hangs up', async () => {
    const res = await page.goto(`${stack.server.url}/playground`);
    expect(res?.status()).toBe(200);
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe');
    await page.fill('#key', key);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#status[data-state="ready"]', { timeout: 5000 });
    expect(await page.$eval('#agent', (s) => (s as HTMLSelectElement).value)).toBe(agentId);
    expect(page.url()).toBe(`${stack.server.url}/playground`);
    expect(await page.evaluate(() => sessionStorage.getItem('switchboard.key'))).toBe(key);

    // The speech recogniser simulator says the fixture's words for the first utterance it hears.
    stack.stt.say(SENTENCE);
    stack.llm.reply({ text: 'Of course, a table for two tomorrow evening.' });
    await page.click('#call');
    await page.waitForSelector('#status[data-state="in-call"]', { timeout: 10_000 });

    // The greeting: played by the worklet (energy measured in the page), and captioned.
    await page.waitForFunction(() => Number(document.getElementById('level')!.dataset['playedMs']) > 800, undefined, { timeout: 15_000 });
    expect(Number(await page.$eval('#level', (m) => (m as HTMLElement).dataset['peakRms']))).toBeGreaterThan(0.02);
    await page.waitForSelector('#captions li[data-speaker="agent"]', { timeout: 10_000 });
    expect(await page.textContent('#captions li[data-speaker="agent"] .text')).toBe(GREETING);

    // The fake microphone's sentence, through the worklet's 16 kHz capture, is the caller's caption; the agent answers.
    await page.waitForSelector('#captions li[data-speaker="caller"]', { timeout: 20_000 });
    expect(await page.textContent('#captions li[data-speaker="caller"] .text')).toBe(SENTENCE);
    await page.waitForFunction(() => document.querySelectorAll('#captions li[data-speaker="agent"]').length >= 2, undefined, { timeout: 15_000 });
    callId = ((await page.textContent('#call-info')) ?? '').replace(/^call /, '');
    expect(callId).toMatch(/^call_/);

    mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'playground.png'), fullPage: true });

    await page.click('#hangup');
    await page.waitForSelector('#status[data-state="ended"]', { timeout: 10_000 });
    expect(await page.textContent('#status')).toContain('caller_hangup');
    const done = await recordWhere(stack, { key, accountId } as any, callId, (r) => r.call_status === 'completed' && r.recording_url !== null && r.analysis_status !== 'pending', 30_000, 'the call recorded and analysed');
    expect(done).toMatchObject({ channel: 'web', ended_reason: 'caller_hangup' });
    expect(done.transcript.split('\n').slice(0, 2)).toEqual([`Agent: ${GREETING}`, `Caller: ${SENTENCE}`]);
    expect(problems).toEqual([]);
  }, 60_000);

  it('the dashboard shows that call, its transcript and analysis, and plays its recording', async () => {
    expect(callId).toMatch(/^call_/);
    const res = await page.goto(`${stack.server.url}/dashboard`);
    expect(res?.status()).toBe(200);
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("media-src 'self'");
    // The key is still in the tab: signed in at once, and the live view is open.
    await page.waitForSelector('#status[data-state="open"]', { timeout: 5000 });
    await page.waitForSelector('#live[data-state="live"]', { timeout: 5000 });
    const callRow = `#calls tr[data-id="${callId}"]`;
    await page.waitForSelector(callRow, { timeout: 5000 });
    expect(await page.textContent(callRow)).toContain('web');
    await page.click(callRow);
    await page.waitForSelector('#call-detail #transcript', { timeout: 5000 });
    const transcript = (await page.textContent('#call-detail #transcript')) ?? '';
    expect(transcript).toContain(`Agent: ${GREETING}`);
    expect(transcript).toContain(`Caller: ${SENTENCE}`);
    expect(await page.textContent('#call-detail')).toContain('caller_hangup');

    // The recording plays: its metadata loads and it has a length.
    const duration = await page.$eval('#recording', (a) => {
      const audio = a as HTMLAudioElement;
      return new Promise<number>((resolve, reject) => {
        const done = () => resolve(audio.duration);
        if (audio.readyState >= 3) return done();
        audio.addEventListener('canplay', done, { once: true });
        audio.addEventListener('error', () => reject(new Error(`audio error ${audio.error?.code}`)), { once: true });
        audio.load();
      });
    });
    expect(duration).toBeGreaterThan(1);
    await page.$eval('#recording', (a) => (a as HTMLAudioElement).play());
    await page.waitForFunction(() => (document.getElementById('recording') as HTMLAudioElement).currentTime > 0.2, undefined, { timeout: 5000 });
    await page.$eval('#recording', (a) => (a as HTMLAudioElement).pause());

    // Nothing went into the address bar.
    expect(page.url()).toBe(`${stack.server.url}/dashboard`);
    mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'dashboard.png'), fullPage: true });
    expect(problems).toEqual([]);
  }, 40_000);

  it('the dashboard lists agents and numbers as text, sends a number’s webhook test and lists the delivery', async () => {
    const evil = '<img src=x id=injected onerror="document.title=1">';
    await createAgent(stack.server, key, { name: evil });
    const { number } = await importNumber(stack, key, agentId, 'twilio');
    const put = await stack.server.request('PUT', `/v1/integrations/webhook/number/${encodeURIComponent(number)}`, { key, body: { url: 'https://127.0.0.1:9/switchboard' } });
    expect(put.status, put.text).toBe(200);

    await page.click('nav button[data-tab="agents"]');
    await page.waitForFunction(() => document.querySelectorAll('#agents tr[data-id]').length === 2, undefined, { timeout: 5000 });
    expect(await page.textContent('#agents')).toContain(evil);
    expect(await page.$('#injected')).toBeNull();
    await page.click(`#agents tr[data-id="${agentId}"]`);
    await page.waitForSelector('#agent-detail:not([hidden]) dl', { timeout: 5000 });
    expect(await page.textContent('#agent-detail')).toContain(GREETING);

    await page.click('nav button[data-tab="numbers"]');
    await page.waitForSelector('#numbers tr[data-id="0"]', { timeout: 5000 });
    expect(await page.textContent('#numbers')).toContain(number);
    await page.click('#numbers tr[data-id="0"]');
    await page.click('#test-webhook');
    await page.waitForSelector('#number-detail .test-result p.error', { timeout: 20_000 });
    expect(await page.textContent('#number-detail .test-result')).toContain('https://127.0.0.1:9/switchboard');

    await page.click('nav button[data-tab="webhooks"]');
    await page.waitForFunction(() => (document.getElementById('deliveries')!.textContent ?? '').includes('webhook.test'), undefined, { timeout: 5000 });
    // No number or key ever reached the address bar.
    expect(page.url()).toBe(`${stack.server.url}/dashboard`);
    expect(problems).toEqual([]);
  }, 40_000);
});
