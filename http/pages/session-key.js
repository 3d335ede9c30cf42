// The key-in-the-tab login shared by the playground and the dashboard: the API key
// (KEY_ID:KEY_SECRET) is kept in this tab's sessionStorage only, and sent only in the
// Authorization header of this page's requests to its own origin (and, for the live view,
// in the websocket's subprotocol). It never goes into a URL.
const STORE = 'switchboard.key';

export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

export function savedKey() {
  return sessionStorage.getItem(STORE) || '';
}

/** Wires the key form: calls onKey(key) at submit and once at load when the tab has a key; onForget when forgotten. */
export function keyForm(form, input, onKey, onForget) {
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const key = input.value.trim();
    if (key.indexOf(':') < 1) return onKey(null);
    sessionStorage.setItem(STORE, key);
    onKey(key);
  });
  form.querySelector('[data-forget]').addEventListener('click', () => {
    sessionStorage.removeItem(STORE);
    input.value = '';
    onForget();
  });
  const saved = savedKey();
  if (saved) {
    input.value = saved;
    onKey(saved);
  }
}

export class ApiError extends Error {
  constructor(status, body) {
    const err = body && body.error;
    super(err ? (err.code || err.type) + ': ' + (err.message || '') : 'HTTP ' + status);
    this.status = status;
  }
}

/** A JSON request to this service's API with the key. `path` never carries a key or a phone number in its query. */
export async function api(key, method, path, body) {
  const headers = { Authorization: 'Bearer ' + key };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' });
  let data = null;
  try {
    data = await res.json();
  } catch (e) {
    data = null;
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}
