// The dashboard (GET /dashboard): the account's agents and numbers (read only, with their
// settings), calls (filters, then a call's transcript, analysis, bookings, latency and
// recording), webhook deliveries with a number's Test button, and batch and SMS campaigns
// whose progress comes live from the live machine view's websocket (/v1/debug/actors/ws,
// the key offered as the subprotocol bearer.KEY_ID.KEY_SECRET), not polled. All state is
// in the page: no fragment, no query string, no history entry; every value is set as text.
import { api, el, keyForm } from './session-key.js';

const $ = (id) => document.getElementById(id);
const statusEl = $('status'), liveEl = $('live'), errorEl = $('error');
let key = null;
let live = null;
let tab = 'calls';
const agentNames = new Map();
/** Campaign cards by campaign id, for the live view's counters. */
const campaignCards = new Map();
/** The last counters (and state) the live view gave for each campaign: a card made later starts from them. */
const liveCounters = new Map();
/** Campaigns the live view named that no list read so far had: each one is re-read for once only. */
const unlisted = new Set();
/** The campaign lists' re-read in flight, and whether another campaign turned up meanwhile. */
let rereading = null;
let rereadAgain = false;

function setPill(pill, state, text) {
  pill.dataset.state = state;
  pill.textContent = text;
}
function showError(e) {
  errorEl.textContent = e ? (e.status === 401 ? 'The key was refused: check it.' : String(e.message || e)) : '';
}
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '\u2014');
const dash = (v) => (v === null || v === undefined || v === '' ? '\u2014' : String(v));
function row(cells, id) {
  const tr = el('tr');
  if (id) {
    tr.dataset.id = id;
    tr.tabIndex = 0;
  }
  for (const c of cells) tr.append(el('td', null, dash(c)));
  return tr;
}
function select(tbody, tr) {
  for (const r of tbody.children) r.removeAttribute('aria-selected');
  tr.setAttribute('aria-selected', 'true');
}
/** Every field of an object as a definition list; objects and lists as indented JSON text. */
function fields(obj, skip = []) {
  const dl = el('dl');
  for (const [k, v] of Object.entries(obj)) {
    if (skip.includes(k)) continue;
    dl.append(el('dt', null, k.replace(/_/g, ' ')), el('dd', null, v !== null && typeof v === 'object' ? JSON.stringify(v, null, 2) : dash(v)));
  }
  return dl;
}
function onRowClick(tbody, fn) {
  const go = (e) => {
    const tr = e.target.closest('tr[data-id]');
    if (!tr || !tbody.contains(tr)) return;
    select(tbody, tr);
    fn(tr.dataset.id);
  };
  tbody.addEventListener('click', go);
  tbody.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') go(e);
  });
}

// ---- Calls ----------------------------------------------------------------------------
async function loadCalls() {
  const form = $('call-filters');
  const q = new URLSearchParams({ limit: '100' });
  for (const name of ['direction', 'agent_id', 'caller_sentiment', 'call_successful']) {
    const v = form.elements[name].value;
    if (v) q.set(name, v);
  }
  const channel = form.elements['channel'].value;
  const { calls } = await api(key, 'GET', '/v1/calls?' + q.toString());
  const body = $('calls');
  body.replaceChildren();
  for (const c of calls) {
    // The API filters by everything above but the channel; that one is applied to the page shown.
    if (channel && c.channel !== channel) continue;
    body.append(row([when(c.started_at), c.direction, c.channel, c.call_status ?? c.ended_reason, c.from_number, c.to_number, c.duration_seconds === null ? null : c.duration_seconds + ' s', c.caller_sentiment], c.call_id));
  }
  if (body.children.length === 0) body.append(row(['No calls.']));
}

async function showCall(id) {
  const c = await api(key, 'GET', '/v1/calls/' + encodeURIComponent(id));
  const panel = $('call-detail');
  panel.hidden = false;
  panel.dataset.callId = c.call_id;
  panel.replaceChildren(el('h2', null, 'Call ' + c.call_id));
  panel.append(
    fields({
      agent: agentNames.get(c.agent_id) || c.agent_id,
      direction: c.direction,
      channel: c.channel,
      status: c.call_status,
      from: c.from_number,
      to: c.to_number,
      started: when(c.started_at),
      ended: when(c.ended_at),
      duration: c.duration_seconds === null ? null : c.duration_seconds + ' s',
      ended_reason: c.ended_reason,
      charged_minutes: c.charged_minutes,
      average_latency: c.avg_latency_ms === null ? null : c.avg_latency_ms + ' ms',
      campaign: c.campaign_id,
    }),
  );
  panel.append(el('h3', null, 'Recording'));
  const src = recordingSrc(c.recording_url);
  if (src) {
    const audio = el('audio');
    audio.id = 'recording';
    audio.controls = true;
    audio.preload = 'metadata';
    audio.src = src;
    panel.append(audio);
  } else panel.append(el('p', 'note', c.recording_url ? 'Recording link not on this service.' : 'No recording.'));
  panel.append(el('h3', null, 'Transcript'));
  const transcript = el('pre', 'transcript', c.transcript || '(none)');
  transcript.id = 'transcript';
  panel.append(transcript);
  panel.append(el('h3', null, 'Analysis'));
  panel.append(fields({ status: c.analysis_status, summary: c.summary, sentiment: c.sentiment, successful: c.successful, voicemail: c.voicemail_detected, extracted: c.extracted }));
  panel.append(el('h3', null, 'Bookings'));
  if (c.bookings.length === 0) panel.append(el('p', 'note', 'None.'));
  for (const b of c.bookings) panel.append(fields(b));
  if (c.precall) {
    panel.append(el('h3', null, 'Pre-call gate'));
    panel.append(fields(c.precall));
  }
}

/**
 * A recording link is this service's public, unguessable `/recordings/<token>.mp3`: played
 * from this page's own origin (the same process serves both, whatever host PUBLIC_BASE_URL names).
 */
function recordingSrc(url) {
  if (!url) return null;
  try {
    const path = new URL(url).pathname;
    return /^\/recordings\/[A-Za-z0-9_-]{32,64}\.mp3$/.test(path) ? path : null;
  } catch (e) {
    return null;
  }
}

// ---- Agents and numbers ---------------------------------------------------------------
async function loadAgents() {
  const { agents } = await api(key, 'GET', '/v1/agents?limit=100');
  const body = $('agents');
  body.replaceChildren();
  const filter = $('call-filters').elements['agent_id'];
  const picked = filter.value;
  filter.replaceChildren(new Option('any', ''));
  agentNames.clear();
  for (const a of agents) {
    agentNames.set(a.agent_id, a.name);
    body.append(row([a.name, a.agent_id, a.language, a.voice_id, a.is_active ? 'yes' : 'no', when(a.created_at)], a.agent_id));
    filter.append(new Option(a.name, a.agent_id));
  }
  filter.value = picked;
}

async function showAgent(id) {
  const a = await api(key, 'GET', '/v1/agents/' + encodeURIComponent(id));
  const panel = $('agent-detail');
  panel.hidden = false;
  panel.replaceChildren(el('h2', null, 'Agent ' + a.name), el('p', 'note', 'Read only: change settings with PATCH /v1/agents/' + a.agent_id + '.'), fields(a));
}

let numbers = [];
async function loadNumbers() {
  ({ phone_numbers: numbers } = await api(key, 'GET', '/v1/phone-numbers'));
  const body = $('numbers');
  body.replaceChildren();
  numbers.forEach((n, i) => {
    const flags = [n.inbound_enabled ? 'inbound' : null, n.outbound_enabled ? 'outbound' : null, n.custom_prompt ? 'custom prompt' : null].filter(Boolean).join(', ');
    // The row's id is its index in the page's list: the number itself stays out of every attribute.
    body.append(row([n.phone_number, n.provider, agentNames.get(n.agent_id) || n.agent_id, flags], String(i)));
  });
}

async function showNumber(index) {
  const brief = numbers[Number(index)];
  if (!brief) return;
  const { phone_number: n } = await api(key, 'GET', '/v1/phone-numbers/' + encodeURIComponent(brief.phone_number));
  const panel = $('number-detail');
  panel.hidden = false;
  const test = el('button', null, 'Test webhook');
  test.type = 'button';
  test.id = 'test-webhook';
  const result = el('div', 'test-result');
  test.addEventListener('click', async () => {
    test.disabled = true;
    result.replaceChildren(el('p', 'note', 'Sending webhook.test\u2026'));
    try {
      const { deliveries } = await api(key, 'POST', '/v1/integrations/webhook/number/' + encodeURIComponent(n.phone_number) + '/test', {});
      result.replaceChildren();
      for (const d of deliveries) result.append(el('p', d.ok ? null : 'error', d.url + ': ' + (d.ok ? 'answered ' + d.status_code : d.status_code !== null ? 'answered ' + d.status_code : d.error)));
      if (tab === 'webhooks') loadDeliveries().catch(showError);
    } catch (e) {
      result.replaceChildren(el('p', 'error', e.message));
    } finally {
      test.disabled = false;
    }
  });
  panel.replaceChildren(el('h2', null, 'Number ' + n.phone_number), el('p', 'note', 'Read only: change settings with PATCH /v1/phone-numbers/{number}.'), test, result, fields(n));
}

// ---- Webhook deliveries ----------------------------------------------------------------
async function loadDeliveries() {
  const q = new URLSearchParams({ limit: '100' });
  const status = $('delivery-filters').elements['status'].value;
  if (status) q.set('status', status);
  const { deliveries } = await api(key, 'GET', '/v1/webhooks/deliveries?' + q.toString());
  const body = $('deliveries');
  body.replaceChildren();
  for (const d of deliveries) {
    body.append(row([when(d.created_at), d.event, d.url, d.status, d.attempts, d.last_status_code ?? d.last_error, d.next_attempt_at ? when(d.next_attempt_at) : null]));
  }
  if (deliveries.length === 0) body.append(row(['No deliveries.']));
}

// ---- Campaigns, live ------------------------------------------------------------------
function campaignCard(c, kind) {
  const card = el('div', 'panel campaign');
  card.dataset.campaignId = c.campaign_id;
  const bar = el('progress');
  bar.max = Math.max(1, c.total_count);
  const counts = el('span', 'counts');
  const state = el('strong', 'state', c.status);
  const p = el('div', 'progress');
  p.append(bar, state, counts);
  card.append(el('h3', null, (c.name || c.campaign_id) + ' \u00b7 ' + c.campaign_id), p);
  const entry = { card, bar, counts, state, kind };
  // The list's counts until the live view says more.
  if (kind === 'sms') show(entry, { total: c.total_count, accepted: c.delivered_count, failed: c.failed_count, pending: c.pending_count });
  else show(entry, { total: c.total_count, ended: c.completed_count + c.failed_count + c.voicemail_count + c.cancelled_count, placed: c.in_progress_count, waiting: c.pending_count });
  // Counters that came while the list was being read are newer than its counts.
  const last = liveCounters.get(c.campaign_id);
  if (last) show(entry, last.counters, last.value);
  campaignCards.set(c.campaign_id, entry);
  return card;
}
function show(entry, counters, value) {
  // Live SMS counters: every recipient asked for and answered (accepted, failed or skipped); skipped ones have no counter of their own.
  const done = entry.kind !== 'sms' ? counters.ended || 0 : counters.asked !== undefined ? counters.asked - (counters.in_flight || 0) : (counters.accepted || 0) + (counters.failed || 0);
  entry.bar.max = Math.max(1, counters.total || 0);
  entry.bar.value = done;
  entry.card.dataset.done = String(done);
  if (value !== undefined) entry.state.textContent = typeof value === 'string' ? value : JSON.stringify(value);
  entry.counts.textContent = Object.keys(counters).map((k) => k.replace(/_/g, ' ') + ' ' + counters[k]).join(' \u00b7 ');
}
async function loadCampaigns() {
  const [batch, sms] = await Promise.all([api(key, 'GET', '/v1/calls/batch?limit=100'), api(key, 'GET', '/v1/sms/campaigns?limit=100')]);
  campaignCards.clear();
  $('batch-campaigns').replaceChildren(...batch.campaigns.map((c) => campaignCard(c, 'batch')));
  $('sms-campaigns').replaceChildren(...sms.campaigns.map((c) => campaignCard(c, 'sms')));
  if (batch.campaigns.length === 0) $('batch-campaigns').append(el('p', 'note', 'None.'));
  if (sms.campaigns.length === 0) $('sms-campaigns').append(el('p', 'note', 'None.'));
}
function onLive(msg) {
  const update = (kind, id, counters, value) => {
    if (kind !== 'campaign' && kind !== 'sms-campaign') return;
    if (counters) liveCounters.set(id, { counters, value });
    const entry = campaignCards.get(id);
    if (entry) {
      if (counters) show(entry, counters, value);
    } else if (tab === 'campaigns' && !unlisted.has(id)) {
      // A campaign created after the list was read: read the lists again, once for it (not at
      // each of its snapshots; one beyond the list's 100 newest would never turn up), and one read at a time.
      unlisted.add(id);
      rereadCampaigns();
    }
  };
  if (msg.type === 'actors') for (const a of msg.actors) update(a.kind, a.id, a.counters, a.value);
  else if (msg.type === '@xstate.snapshot') update(msg.kind, msg.actorId, msg.snapshot.counters, msg.snapshot.value);
}
function rereadCampaigns() {
  if (rereading) {
    rereadAgain = true;
    return;
  }
  rereading = loadCampaigns()
    .catch(showError)
    .finally(() => {
      rereading = null;
      if (rereadAgain) {
        rereadAgain = false;
        rereadCampaigns();
      }
    });
}
function connectLive() {
  if (live) live.close(1000);
  live = null;
  const sep = key.indexOf(':');
  let ws;
  try {
    ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/debug/actors/ws', ['bearer.' + key.slice(0, sep) + '.' + key.slice(sep + 1)]);
  } catch (e) {
    return setPill(liveEl, 'error', 'live view refused');
  }
  live = ws;
  setPill(liveEl, 'connecting', 'live view connecting\u2026');
  ws.onopen = () => setPill(liveEl, 'live', 'live');
  ws.onmessage = (m) => {
    try {
      onLive(JSON.parse(m.data));
    } catch (e) {
      /* not JSON: ignored */
    }
  };
  ws.onclose = () => {
    if (live === ws) {
      live = null;
      setPill(liveEl, 'closed', 'live view closed');
    }
  };
}

// ---- Tabs and login -------------------------------------------------------------------
const loaders = { calls: loadCalls, agents: loadAgents, numbers: loadNumbers, webhooks: loadDeliveries, campaigns: loadCampaigns };
function openTab(name) {
  tab = name;
  for (const b of $('tabs').querySelectorAll('button')) b.setAttribute('aria-selected', String(b.dataset.tab === name));
  for (const s of document.querySelectorAll('section[data-panel]')) s.hidden = s.dataset.panel !== name;
  if (key) loaders[name]().then(() => showError(null), showError);
}
$('tabs').addEventListener('click', (e) => {
  const b = e.target.closest('button[data-tab]');
  if (b) openTab(b.dataset.tab);
});
$('call-filters').addEventListener('submit', (e) => {
  e.preventDefault();
  loadCalls().then(() => showError(null), showError);
});
$('delivery-filters').addEventListener('submit', (e) => {
  e.preventDefault();
  loadDeliveries().then(() => showError(null), showError);
});
onRowClick($('calls'), (id) => showCall(id).catch(showError));
onRowClick($('agents'), (id) => showAgent(id).catch(showError));
onRowClick($('numbers'), (i) => showNumber(i).catch(showError));

keyForm($('login'), $('key'), async (k) => {
  key = k;
  if (!key) return setPill(statusEl, 'error', 'paste the key as KEY_ID:KEY_SECRET');
  setPill(statusEl, 'loading', 'loading\u2026');
  try {
    await loadAgents();
    setPill(statusEl, 'open', 'signed in');
    connectLive();
    openTab(tab);
  } catch (e) {
    setPill(statusEl, 'error', e.status === 401 ? 'the key was refused' : 'error');
    showError(e);
  }
}, () => {
  key = null;
  if (live) live.close(1000);
  live = null;
  liveCounters.clear();
  unlisted.clear();
  for (const id of ['calls', 'agents', 'numbers', 'deliveries', 'batch-campaigns', 'sms-campaigns']) $(id).replaceChildren();
  for (const id of ['call-detail', 'agent-detail', 'number-detail']) $(id).hidden = true;
  setPill(statusEl, 'idle', 'no key');
  setPill(liveEl, 'idle', 'live view off');
});
