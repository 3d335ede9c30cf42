// The playground (GET /playground): paste a key, pick an agent, Call. The call is a web
// call: POST /v1/web-calls, then its media websocket on this same host with the one-time
// access token (README "Web calls"). The microphone (echo cancellation, noise suppression
// and gain control on) and the agent's voice both go through one AudioWorklet
// (playground-worklet.js): it sends 20 ms frames of 16 kHz PCM here for the socket, plays
// the agent's 16 kHz PCM at the context's rate, echoes each mark once the audio before it
// has played, and drops its queue on `clear`. Captions come from `transcript` messages.
import { api, el, keyForm } from './session-key.js';

const $ = (id) => document.getElementById(id);
const statusEl = $('status'), agentSel = $('agent'), callBtn = $('call'), hangupBtn = $('hangup');
const level = $('level'), captions = $('captions'), info = $('call-info');
let key = null;
let call = null; // { ws, ctx, node, stream, id, ended }

function setStatus(state, text) {
  statusEl.dataset.state = state;
  statusEl.textContent = text;
}

async function loadAgents() {
  agentSel.replaceChildren();
  agentSel.disabled = callBtn.disabled = true;
  if (!key) return setStatus('error', 'paste the key as KEY_ID:KEY_SECRET');
  setStatus('loading', 'loading agents\u2026');
  try {
    const { agents } = await api(key, 'GET', '/v1/agents?limit=100');
    for (const a of agents) {
      const opt = el('option', null, a.name + (a.is_active ? '' : ' (inactive)'));
      opt.value = a.agent_id;
      opt.disabled = !a.is_active;
      agentSel.append(opt);
    }
    if (agents.length === 0) return setStatus('idle', 'no agents on this account yet (POST /v1/agents)');
    agentSel.disabled = false;
    callBtn.disabled = call !== null;
    setStatus('ready', 'ready');
  } catch (e) {
    setStatus('error', e.status === 401 ? 'the key was refused: check it' : 'could not list agents: ' + e.message);
  }
}

function caption(speaker, text) {
  const li = el('li');
  li.dataset.speaker = speaker;
  li.append(el('span', 'who', speaker === 'agent' ? 'Agent' : 'You'), el('span', 'text', text));
  captions.append(li);
  captions.scrollTop = captions.scrollHeight;
}

let playedSamples = 0, peakRms = 0;
function onPlayed(msg) {
  playedSamples += msg.samples;
  const rms = Math.sqrt(msg.energy / msg.samples);
  peakRms = Math.max(peakRms, rms);
  level.value = rms;
  level.dataset.playedMs = String(Math.round((playedSamples / msg.rate) * 1000));
  level.dataset.peakRms = peakRms.toFixed(4);
}

function finish(reason) {
  if (!call || call.ended) return;
  call.ended = true;
  for (const t of call.stream ? call.stream.getTracks() : []) t.stop();
  if (call.ctx) call.ctx.close().catch(() => {});
  if (call.ws && call.ws.readyState <= 1) call.ws.close(1000);
  call = null;
  hangupBtn.disabled = true;
  callBtn.disabled = agentSel.disabled;
  level.value = 0;
  setStatus('ended', 'call ended' + (reason ? ' (' + reason + ')' : ''));
}

async function startCall() {
  const agentId = agentSel.value;
  if (!agentId || call) return;
  callBtn.disabled = true;
  captions.replaceChildren();
  playedSamples = 0;
  peakRms = 0;
  call = { ws: null, ctx: null, node: null, stream: null, ended: false };
  const current = call;
  setStatus('connecting', 'placing the call\u2026');
  try {
    // The context first, inside the click, so the browser lets it play.
    current.ctx = new AudioContext({ latencyHint: 'interactive' });
    await current.ctx.audioWorklet.addModule('/pages/playground-worklet.js');
    current.stream = await navigator.mediaDevices.getUserMedia({
      audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true, channelCount: 1 },
    });
    if (current.ended) return;
    const placed = await api(key, 'POST', '/v1/web-calls', { agent_id: agentId });
    if (current.ended) return;
    current.id = placed.call_id;
    info.textContent = 'call ' + placed.call_id;
    current.node = new AudioWorkletNode(current.ctx, 'switchboard-call', { numberOfInputs: 1, numberOfOutputs: 1, outputChannelCount: [1] });
    current.ctx.createMediaStreamSource(current.stream).connect(current.node);
    current.node.connect(current.ctx.destination);
    // The socket is this service's, on this page's host (the path the answer names): the
    // page and the socket are served by the same process, whatever PUBLIC_BASE_URL says.
    const path = new URL(placed.websocket_url).pathname;
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + path + '?access_token=' + encodeURIComponent(placed.access_token);
    const ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    current.ws = ws;
    let started = false;
    current.node.port.onmessage = ({ data }) => {
      if (data.type === 'pcm') {
        if (started && ws.readyState === 1) ws.send(data.pcm);
      } else if (data.type === 'mark') {
        if (ws.readyState === 1) ws.send(JSON.stringify({ type: 'mark', name: data.name }));
      } else if (data.type === 'played') onPlayed(data);
    };
    ws.onmessage = ({ data }) => {
      if (typeof data !== 'string') {
        current.node.port.postMessage({ type: 'play', pcm: data }, [data]);
        return;
      }
      let msg;
      try {
        msg = JSON.parse(data);
      } catch (e) {
        return;
      }
      if (msg.type === 'start') {
        started = true;
        hangupBtn.disabled = false;
        setStatus('in-call', 'on the call');
      } else if (msg.type === 'mark') current.node.port.postMessage({ type: 'mark', name: String(msg.name) });
      else if (msg.type === 'clear') current.node.port.postMessage({ type: 'clear' });
      else if (msg.type === 'transcript') caption(msg.speaker === 'agent' ? 'agent' : 'caller', String(msg.text));
      else if (msg.type === 'end') finish(String(msg.reason));
    };
    ws.onclose = (e) => finish(e.code === 1000 ? '' : 'connection closed ' + e.code);
    if (current.ctx.state === 'suspended') await current.ctx.resume();
  } catch (e) {
    finish();
    setStatus('error', 'the call failed: ' + (e && e.message ? e.message : String(e)));
  }
}

keyForm($('login'), $('key'), (k) => {
  key = k;
  loadAgents();
}, () => {
  key = null;
  if (call) hangup();
  agentSel.replaceChildren();
  agentSel.disabled = callBtn.disabled = true;
  setStatus('idle', 'no key');
});

function hangup() {
  if (!call) return;
  if (call.ws && call.ws.readyState === 1) call.ws.send(JSON.stringify({ type: 'hangup' }));
  else finish('hung up');
}

$('dial').addEventListener('submit', (e) => {
  e.preventDefault();
  startCall();
});
hangupBtn.addEventListener('click', hangup);
