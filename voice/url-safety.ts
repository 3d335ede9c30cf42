// Decides whether the service may send requests to a customer-supplied URL (webhooks,
// pre-call and in-call hooks, custom functions): https only, no credentials, and a
// host on the public internet (public unicast, by ipaddr.js) unless
// ALLOW_PRIVATE_NETWORK_TARGETS is on.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type UrlCheck = { ok: true } | { ok: false; reason: string };

export interface UrlCheckOptions {
  /** ALLOW_PRIVATE_NETWORK_TARGETS: skip the address checks (tests and development). */
  allowPrivate: boolean;
  /** How long a DNS look-up may take before the host counts as unresolvable. */
  timeoutMs?: number;
}

/**
 * What each special-purpose range of ipaddr.js is, in words. Anything not `unicast` is
 * refused; a range missing here (ipaddr.js may name new ones) is refused all the same.
 */
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address',
  private: 'a private network address',
  uniqueLocal: 'a private network address (unique local)',
  reserved: 'a reserved, documentation or benchmarking address',
  ipv4Mapped: 'an IPv4-mapped address',
  rfc6145: 'an IPv4-translated address',
  rfc6052: 'a NAT64 address',
  '6to4': 'a 6to4 transition address',
  teredo: 'a Teredo transition address',
  benchmarking: 'a benchmarking address',
  amt: 'an AMT relay address',
  as112: 'an AS112 address',
  as112v6: 'an AS112 address',
  deprecated: 'a deprecated address',
  orchid2: 'an ORCHIDv2 address',
  droneRemoteIdProtocolEntityTags: 'a special-purpose address',
};

/**
 * Why an address is not on the public internet, or null when it is. The classifier is
 * ipaddr.js's special-purpose registry (RFC 6890 and its successors): only `unicast`
 * passes, so documentation, benchmarking, IETF protocol and transition ranges are refused
 * along with the private ones. IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is judged as the IPv4
 * address it carries; every other IPv6 form that embeds IPv4 (translated, NAT64, 6to4,
 * Teredo) is refused outright.
 */
export function nonPublicReason(ip: string): string | null {
  if (isIP(ip) === 0 || !ipaddr.isValid(ip)) return 'not an IP address';
  // process() unwraps ::ffff:a.b.c.d into a.b.c.d.
  const range = ipaddr.process(ip).range();
  if (range === 'unicast') return null;
  return RANGE_WORDS[range] ?? `a special-purpose address (${range})`;
}

async function resolveAll(host: string, timeoutMs: number): Promise<string[] | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((res) => {
    timer = setTimeout(() => res(null), timeoutMs);
  });
  try {
    const found = lookup(host, { all: true, verbatim: true }).then(
      (list) => list.map((a) => a.address),
      () => null,
    );
    return await Promise.race([found, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks a target URL before it is stored. The host's addresses are checked as they
 * resolve now; whoever sends to the URL later must check again (DNS can change).
 * With `allowPrivate` no look-up happens at all: its only purpose is the address check,
 * and development hosts often do not resolve until their service is up.
 */
export async function checkTargetUrl(url: string, opts: UrlCheckOptions): Promise<UrlCheck> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'is not a valid URL (expected e.g. https://example.com/hook)' };
  }
  // The parser would quietly trim or encode these; stored URLs stay exactly as sent.
  if (/\s/.test(url)) return { ok: false, reason: 'must not contain spaces or line breaks' };
  if (parsed.protocol !== 'https:') return { ok: false, reason: `must use https, not ${parsed.protocol.replace(/:$/, '')}` };
  if (parsed.username || parsed.password) return { ok: false, reason: 'must not contain a user name or password' };
  if (opts.allowPrivate) return { ok: true };

  // WHATWG URL already turned decimal, hex and short IPv4 forms into dotted quads.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  const literal = isIP(host) !== 0;
  const addresses = literal ? [host] : await resolveAll(host, opts.timeoutMs ?? 5000);
  if (!addresses || addresses.length === 0) return { ok: false, reason: `has a host that does not resolve (${host})` };
  for (const address of addresses) {
    const why = nonPublicReason(address);
    if (why) {
      const where = literal ? '' : ` (${host} resolves to ${address})`;
      return { ok: false, reason: `points to ${why}${where}; only public hosts are allowed` };
    }
  }
  return { ok: true };
}
