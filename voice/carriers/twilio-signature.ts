// Carrier A's webhook signature `X-Twilio-Signature` (carriers.md §2), for the
// `/carrier/twilio/*` endpoints (verify) and the simulator (sign):
//   base64(HMAC-SHA1(authToken, url + every form parameter sorted by key as `key` + `value`)).
// `url` is the full URL the carrier requested, query string included: the endpoints
// rebuild it as PUBLIC_BASE_URL + path + query, never from the Host header. A repeated
// key contributes each distinct value once, values sorted (as twilio-node does). The
// media websocket handshake is signed the same way over its wss:// URL with no parameters.

import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Form parameters as received: a parsed form body (URLSearchParams keeps repeated keys),
 * or a record where an array stands for a repeated key. Undefined values are skipped.
 */
export type TwilioParams = URLSearchParams | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * The signature carrier A sends for a POST of `params` to `url`, signed over `url`
 * exactly as given. Throws a TypeError when `url` is not absolute.
 */
export function signTwilio(authToken: string, url: string, params: TwilioParams = {}): string {
  if (!URL.canParse(url)) throw new TypeError(`signTwilio: not an absolute URL: ${url}`);
  return hmac(authToken, url, params);
}

/**
 * True when `signatureHeader` is the signature of `params` posted to `url` with this
 * token. Compares in constant time; a missing header, a relative URL or an empty token
 * is simply false. Tolerates what the carrier's own helper tolerates, because the
 * carrier is not consistent about it: the URL without its port and with the scheme's
 * default port made explicit (:443 for https/wss, :80 for http/ws), each both as given
 * and as WHATWG-normalised (e.g. a `'` in the query as `%27`).
 */
export function verifyTwilio(authToken: string, url: string, params: TwilioParams, signatureHeader: string | null | undefined): boolean {
  if (!authToken || !signatureHeader) return false;
  let normalized: string;
  try {
    normalized = new URL(url).toString();
  } catch {
    return false;
  }
  const given = Buffer.from(signatureHeader);
  const candidates = new Set([url, normalized].flatMap((u) => [withoutPort(u), withDefaultPort(u)]));
  let valid = false;
  // Every candidate is checked, so the time taken does not depend on which one matched.
  for (const candidate of candidates) if (safeEqual(given, hmac(authToken, candidate, params))) valid = true;
  return valid;
}

function hmac(authToken: string, url: string, params: TwilioParams): string {
  const grouped = groupParams(params);
  let data = url;
  for (const key of [...grouped.keys()].sort()) {
    for (const value of [...new Set(grouped.get(key))].sort()) data += key + value;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

function groupParams(params: TwilioParams): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const add = (key: string, value: string) => {
    const list = out.get(key);
    if (list) list.push(value);
    else out.set(key, [value]);
  };
  if (params instanceof URLSearchParams) {
    for (const [key, value] of params) add(key, value);
    return out;
  }
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (typeof value === 'string') add(key, value);
    else for (const v of value) add(key, v);
  }
  return out;
}

// scheme://[userinfo@]host[:port] and the rest; string surgery keeps the rest as given.
const AUTHORITY = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is;
const DEFAULT_PORT: Record<string, string> = { 'https://': '443', 'wss://': '443', 'http://': '80', 'ws://': '80' };

function splitAuthority(url: string): { scheme: string; userinfo: string; host: string; port: string; rest: string } | null {
  const m = AUTHORITY.exec(url);
  if (!m) return null;
  const authority = m[2] ?? '';
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : '';
  const hostPort = authority.slice(at + 1);
  // A bracketed IPv6 host has colons of its own; the port is only after the bracket.
  const portMatch = /:(\d*)$/.exec(hostPort.includes(']') ? hostPort.slice(hostPort.indexOf(']')) : hostPort);
  const port = portMatch?.[1] ?? '';
  const host = portMatch ? hostPort.slice(0, hostPort.length - portMatch[0].length) : hostPort;
  return { scheme: m[1] ?? '', userinfo, host, port, rest: m[3] ?? '' };
}

function withoutPort(url: string): string {
  const p = splitAuthority(url);
  return p ? `${p.scheme}${p.userinfo}${p.host}${p.rest}` : url;
}

function withDefaultPort(url: string): string {
  const p = splitAuthority(url);
  if (!p) return url;
  const port = p.port || DEFAULT_PORT[p.scheme.toLowerCase()] || '';
  return `${p.scheme}${p.userinfo}${p.host}${port ? `:${port}` : ''}${p.rest}`;
}

function safeEqual(given: Buffer, expected: string): boolean {
  const want = Buffer.from(expected);
  // An HMAC-SHA1 in base64 is always 28 characters, so the length says nothing secret.
  return given.length === want.length && timingSafeEqual(given, want);
}
