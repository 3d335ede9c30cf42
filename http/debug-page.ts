// The live machine view's page, `GET /debug`: one static HTML document with its script
// and style inline, no build step. The user pastes an API key (kept in the tab's
// sessionStorage, never in a URL), the page opens `/v1/debug/actors/ws` with the key as
// the subprotocol `bearer.KEY_ID.KEY_SECRET`, and renders each actor's state, tags and
// transitions as they arrive. Every value shown is set with textContent. The Content
// Security Policy allows exactly this script and style (by hash) and a same-origin
// websocket, nothing else.
import { createHash } from 'node:crypto';

const STYLE = `
:root { color-scheme: light dark; --muted: #6b7280; --line: #d1d5db; --accent: #2563eb; --ok: #15803d; --bad: #b91c1c; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 1rem 1.5rem 3rem; max-width: 72rem; }
header { display: flex; align-items: baseline; gap: 1rem; flex-wrap: wrap; }
h1 { font-size: 1.3rem; margin: 0 0 .5rem; }
#status { padding: .1rem .6rem; border-radius: 1rem; border: 1px solid var(--line); color: var(--muted); }
#status[data-state="open"] { color: var(--ok); border-color: var(--ok); }
#status[data-state="closed"], #status[data-state="error"] { color: var(--bad); border-color: var(--bad); }
form { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; margin: .5rem 0; }
input { font: inherit; padding: .35rem .5rem; width: 34rem; max-width: 100%; }
button { font: inherit; padding: .35rem .8rem; cursor: pointer; }
.note { color: var(--muted); margin: .25rem 0 1rem; }
#actors { display: grid; grid-template-columns: repeat(auto-fill, minmax(22rem, 1fr)); gap: 1rem; }
.actor { border: 1px solid var(--line); border-radius: .5rem; padding: .6rem .8rem; }
.actor[data-status="done"], .actor[data-status="stopped"] { opacity: .6; }
.actor[data-status="error"] { border-color: var(--bad); }
.actor h2 { font-size: .95rem; margin: 0 0 .3rem; font-weight: 600; overflow-wrap: anywhere; }
.kind { text-transform: uppercase; font-size: .75rem; color: var(--accent); letter-spacing: .05em; }
.state { margin: .2rem 0 .4rem; }
.value { font-size: 1.05rem; }
.tags, .status, .counters, time { color: var(--muted); }
.transitions { margin: 0; padding-left: 1.4rem; max-height: 18rem; overflow-y: auto; font-size: .85rem; }
.transitions code { color: var(--accent); }
`;

const SCRIPT = `
'use strict';
const STORE = 'switchboard.debug.key';
const MAX_TRANSITIONS = 100;
const MAX_FINISHED = 50;
const $ = (id) => document.getElementById(id);
const form = $('connect'), keyInput = $('key'), statusEl = $('status'), grid = $('actors'), empty = $('empty');
const actors = new Map();
let socket = null;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function setStatus(state, text) {
  statusEl.dataset.state = state;
  statusEl.textContent = text;
}
// "ringing", or { "in-progress": "listening" } shown as "in-progress.listening".
function stateText(value) {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    return Object.keys(value).map((k) => { const inner = stateText(value[k]); return inner ? k + '.' + inner : k; }).join(', ');
  }
  return value == null ? '' : String(value);
}
function card(kind, id) {
  let a = actors.get(id);
  if (a) return a;
  const root = el('section', 'actor');
  root.dataset.actorId = id;
  const head = el('h2');
  head.append(el('span', 'kind', kind), ' ', el('code', 'id', id));
  const value = el('strong', 'value'), status = el('span', 'status'), tags = el('span', 'tags');
  const state = el('p', 'state');
  state.append('state ', value, ' ', status, ' ', tags);
  const counters = el('p', 'counters');
  const transitions = el('ol', 'transitions');
  root.append(head, state, counters, transitions);
  grid.prepend(root);
  a = { root, value, status, tags, counters, transitions };
  actors.set(id, a);
  empty.hidden = true;
  return a;
}
function show(a, value, tags, status, counters) {
  a.value.textContent = stateText(value);
  // A kind's counts (a campaign's progress), as text: "total 6 · placed 2 · …".
  a.counters.textContent = counters ? Object.keys(counters).map((k) => k.replace(/_/g, ' ') + ' ' + counters[k]).join(' \u00b7 ') : '';
  a.root.dataset.state = stateText(value);
  a.root.dataset.status = status;
  a.status.textContent = status === 'active' ? '' : '(' + status + ')';
  a.tags.textContent = tags.length ? 'tags: ' + tags.join(', ') : '';
}
function addTransition(a, eventType, value, at) {
  const li = el('li');
  li.dataset.event = eventType;
  li.dataset.state = stateText(value);
  li.append(el('time', null, new Date(at).toLocaleTimeString()), ' ', el('code', null, eventType), ' \\u2192 ', el('strong', null, stateText(value)));
  a.transitions.append(li);
  while (a.transitions.children.length > MAX_TRANSITIONS) a.transitions.firstElementChild.remove();
  a.transitions.scrollTop = a.transitions.scrollHeight;
}
// Finished actors stay on screen, dimmed, until MAX_FINISHED newer ones have finished.
function pruneFinished() {
  const finished = [...actors.values()].filter((a) => a.root.dataset.status !== 'active');
  for (const a of finished.slice(0, Math.max(0, finished.length - MAX_FINISHED))) {
    a.root.remove();
    actors.delete(a.root.dataset.actorId);
  }
}
function onMessage(msg) {
  if (msg.type === 'actors') {
    for (const a of actors.values()) a.root.remove();
    actors.clear();
    empty.hidden = msg.actors.length > 0;
    for (const item of msg.actors) {
      const a = card(item.kind, item.id);
      show(a, item.value, item.tags, item.status, item.counters);
      addTransition(a, item.last_event ? item.last_event.type : '(start)', item.value, Date.parse(item.updated_at));
    }
  } else if (msg.type === '@xstate.snapshot') {
    const a = card(msg.kind, msg.actorId);
    show(a, msg.snapshot.value, msg.snapshot.tags, msg.snapshot.status, msg.snapshot.counters);
    addTransition(a, msg.event ? msg.event.type : '(start)', msg.snapshot.value, msg.at);
    if (msg.snapshot.status !== 'active') pruneFinished();
  }
  // '@xstate.event' carries the event alone; the snapshot right after it shows where it led.
}
function connect(key) {
  if (socket) socket.close(1000);
  socket = null;
  const sep = key.indexOf(':');
  if (sep < 1) return setStatus('error', 'paste the key as KEY_ID:KEY_SECRET');
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/debug/actors/ws';
  let ws;
  try {
    // Browsers refuse ":" in a subprotocol, so the key travels as bearer.KEY_ID.KEY_SECRET.
    ws = new WebSocket(url, ['bearer.' + key.slice(0, sep) + '.' + key.slice(sep + 1)]);
  } catch (e) {
    return setStatus('error', 'the key holds characters a key cannot have');
  }
  socket = ws;
  setStatus('connecting', 'connecting\\u2026');
  ws.onopen = () => setStatus('open', 'live');
  ws.onmessage = (m) => {
    let msg;
    try { msg = JSON.parse(m.data); } catch (e) { return; }
    onMessage(msg);
  };
  ws.onclose = (e) => {
    if (socket !== ws) return;
    socket = null;
    setStatus('closed', e.code === 1006 ? 'refused or lost: check the key, then connect again' : 'closed (' + e.code + (e.reason ? ': ' + e.reason : '') + ')');
  };
}
form.addEventListener('submit', (e) => {
  e.preventDefault();
  const key = keyInput.value.trim();
  sessionStorage.setItem(STORE, key);
  connect(key);
});
$('forget').addEventListener('click', () => {
  sessionStorage.removeItem(STORE);
  keyInput.value = '';
  if (socket) socket.close(1000);
  socket = null;
  setStatus('idle', 'not connected');
});
const saved = sessionStorage.getItem(STORE);
if (saved) {
  keyInput.value = saved;
  connect(saved);
}
`;

const sha256 = (s: string): string => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

export const DEBUG_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Switchboard · live machine view</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>Live machine view</h1><span id="status" data-state="idle">not connected</span></header>
<form id="connect" autocomplete="off">
<label for="key">API key</label>
<input id="key" name="key" type="password" placeholder="KEY_ID:KEY_SECRET" spellcheck="false" required>
<button type="submit">Connect</button>
<button type="button" id="forget">Forget key</button>
</form>
<p class="note">The key stays in this tab (sessionStorage) and is sent only to this server, when the websocket opens. Phone numbers, key presses, prompts and carrier errors are redacted by the server.</p>
<main id="actors"><p id="empty">No live actors yet. Place or receive a call and it shows up here.</p></main>
<script>${SCRIPT}</script>
</body>
</html>
`;

export const DEBUG_PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': [
    "default-src 'none'",
    `script-src ${sha256(SCRIPT)}`,
    `style-src ${sha256(STYLE)}`,
    // 'self' covers ws:/wss: of the same host (CSP level 3).
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
};
