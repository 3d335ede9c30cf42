// Decides whether the service may send requests to a customer-supplied URL (webhooks,
// pre-call and in-call hooks, custom functions): https only, no credentials, and a
// host on the public internet unless ALLOW_PRIVATE_NETWORK_TARGETS is on.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export type UrlCheck = { ok: true } | { ok: false; reason: string };

export interface UrlCheckOptions {
  /** ALLOW_PRIVATE_NETWORK_TARGETS: skip the address checks (tests and development). */
  allowPrivate: boolean;
  /** How long a DNS look-up may take before the host counts as unresolvable. */
  timeoutMs?: number;
}

/** A CIDR block: [first address, prefix length, what addresses in it are]. */
type Block = readonly [string, number, string];

const V4_BLOCKED: Block[] = [
  ['0.0.0.0', 8, 'an unspecified address'],
  ['10.0.0.0', 8, 'a private network address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address'],
  ['172.16.0.0', 12, 'a private network address'],
  ['192.168.0.0', 16, 'a private network address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

const V6_BLOCKED: Block[] = [
  ['::', 128, 'an unspecified address'],
  ['::1', 128, 'a loopback address'],
  ['fc00::', 7, 'a private network address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
];

function v4ToBig(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** Parses any valid IPv6 text (with `::` and an optional dotted IPv4 tail) to 128 bits. */
function v6ToBig(ip: string): bigint {
  let text = ip;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const v4 = v4ToBig(dotted[1]!);
    text = text.slice(0, dotted.index) + `${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

function inBlock(addr: bigint, bits: number, [base, prefix]: Block, parse: (s: string) => bigint): boolean {
  const shift = BigInt(bits - prefix);
  return addr >> shift === parse(base) >> shift;
}

/**
 * Why an address is not on the public internet, or null when it is. IPv6 forms that
 * carry an IPv4 address (mapped ::ffff:0:0/96, compatible ::/96, NAT64 64:ff9b::/96,
 * 6to4 2002::/16) are judged by the IPv4 address inside them.
 */
export function nonPublicReason(ip: string): string | null {
  const family = isIP(ip);
  if (family === 4) {
    const addr = v4ToBig(ip);
    return V4_BLOCKED.find((b) => inBlock(addr, 32, b, v4ToBig))?.[2] ?? null;
  }
  if (family !== 6) return 'not an IP address';
  const addr = v6ToBig(ip);
  const blocked = V6_BLOCKED.find((b) => inBlock(addr, 128, b, v6ToBig));
  if (blocked) return blocked[2];
  const embedded = embeddedV4(addr);
  return embedded === null ? null : nonPublicReason(embedded);
}

function embeddedV4(addr: bigint): string | null {
  const low32 = addr & 0xffffffffn;
  const top96 = addr >> 32n;
  let v4: bigint | null = null;
  if (top96 === 0xffffn || top96 === 0n || top96 === v6ToBig('64:ff9b::') >> 32n) v4 = low32;
  else if (addr >> 112n === 0x2002n) v4 = (addr >> 80n) & 0xffffffffn;
  if (v4 === null) return null;
  return [24n, 16n, 8n, 0n].map((s) => String((v4 >> s) & 0xffn)).join('.');
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
