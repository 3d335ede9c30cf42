// Target URL checks: scheme and credential rules, every refused address range at its
// edges (IPv4, IPv6, IPv4 inside IPv6), localhost through the real resolver, and the
// ALLOW_PRIVATE_NETWORK_TARGETS escape hatch. IP literals and localhost only: no DNS.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkTargetUrl, nonPublicReason } from './url-safety.ts';

const strict = { allowPrivate: false };
const lenient = { allowPrivate: true };

async function reasonFor(url: string, opts = strict): Promise<string | null> {
  const r = await checkTargetUrl(url, opts);
  return r.ok ? null : r.reason;
}

describe('checkTargetUrl: URL shape', () => {
  it.each([
    ['not a url', /not a valid URL/],
    ['', /not a valid URL/],
    ['example.com/hook', /not a valid URL/],
    ['http://8.8.8.8/hook', /must use https, not http/],
    ['ftp://8.8.8.8/file', /must use https, not ftp/],
    ['javascript:alert(1)', /must use https/],
    ['https://user:pass@8.8.8.8/hook', /user name or password/],
    ['https://user@8.8.8.8/hook', /user name or password/],
    [' https://8.8.8.8/hook', /spaces/],
    ['https://8.8.8.8/a b', /spaces/],
  ])('refuses %j', async (url, why) => {
    expect(await reasonFor(url)).toMatch(why);
  });

  it('refuses http and credentials even when private targets are allowed', async () => {
    expect(await reasonFor('http://localhost/hook', lenient)).toMatch(/https/);
    expect(await reasonFor('https://a:b@localhost/hook', lenient)).toMatch(/password/);
  });

  it('accepts https URLs on public addresses, with ports, paths and queries', async () => {
    for (const url of ['https://8.8.8.8/hook', 'https://1.1.1.1:8443/a/b?x=1#f', 'https://[2606:4700:4700::1111]/hook', 'https://[::ffff:8.8.8.8]/']) {
      expect(await checkTargetUrl(url, strict)).toEqual({ ok: true });
    }
  });
});

describe('checkTargetUrl: refused addresses', () => {
  it.each([
    ['https://127.0.0.1/', /loopback/],
    ['https://127.255.255.254/', /loopback/],
    ['https://10.0.0.1/', /private/],
    ['https://10.255.255.255/', /private/],
    ['https://172.16.0.0/', /private/],
    ['https://172.31.255.255/', /private/],
    ['https://192.168.1.10/', /private/],
    ['https://169.254.169.254/latest/meta-data', /link-local/],
    ['https://0.0.0.0/', /unspecified/],
    ['https://100.64.0.1/', /carrier-grade NAT/],
    ['https://100.127.255.255/', /carrier-grade NAT/],
    ['https://224.0.0.1/', /multicast/],
    ['https://239.255.255.250/', /multicast/],
    ['https://255.255.255.255/', /broadcast/],
    // Special-purpose ranges a hand-written table missed (issue 18): documentation,
    // benchmarking, IETF protocol assignments and the IPv4-translated IPv6 form.
    ['https://192.0.2.2:18443/', /documentation/],
    ['https://192.0.2.1/', /documentation/],
    ['https://198.51.100.7/', /documentation/],
    ['https://203.0.113.9/', /documentation/],
    ['https://198.18.0.1/', /benchmarking/],
    ['https://198.19.255.254/', /benchmarking/],
    ['https://192.0.0.170/', /reserved/],
    ['https://[::ffff:0:127.0.0.1]/', /translated/],
    ['https://[2001:db8::1]/', /documentation/],
    ['https://[2001::1]/', /Teredo/],
    ['https://[::1]/', /loopback/],
    ['https://[::]/', /unspecified/],
    ['https://[fc00::1]/', /private/],
    ['https://[fd12:3456::1]/', /private/],
    ['https://[fe80::1]/', /link-local/],
    ['https://[febf:ffff::1]/', /link-local/],
    ['https://[ff02::1]/', /multicast/],
    ['https://[::ffff:127.0.0.1]/', /loopback/],
    ['https://[::ffff:10.1.2.3]/', /private/],
    ['https://[::ffff:a9fe:a9fe]/', /link-local/],
    ['https://[64:ff9b::192.168.0.1]/', /NAT64/],
    ['https://[2002:7f00:1::]/', /6to4/],
    // WHATWG URL reads these as 127.0.0.1; they must not slip through as names.
    ['https://2130706433/', /loopback/],
    ['https://0x7f.1/', /loopback/],
    ['https://017700000001/', /loopback/],
  ])('refuses %s', async (url, why) => {
    const reason = await reasonFor(url);
    expect(reason).toMatch(why);
    expect(reason).toMatch(/only public hosts are allowed/);
  });

  it.each([
    'https://172.15.255.255/',
    'https://172.32.0.0/',
    'https://100.63.255.255/',
    'https://100.128.0.0/',
    'https://11.0.0.0/',
    'https://169.253.255.255/',
    'https://192.167.255.255/',
    'https://223.255.255.255/',
    'https://[fbff:ffff::1]/',
    'https://[fe7f::1]/',
  ])('accepts the public neighbour %s', async (url) => {
    expect(await checkTargetUrl(url, strict)).toEqual({ ok: true });
  });

  it('resolves localhost and refuses it, naming the address', async () => {
    const reason = await reasonFor('https://localhost:8443/hook');
    expect(reason).toMatch(/loopback/);
    expect(reason).toMatch(/localhost resolves to/);
  });

  it('refuses a host that does not resolve', async () => {
    expect(await reasonFor('https://no-such-host.invalid/hook')).toMatch(/does not resolve/);
  });

  it('allows private and loopback targets, and skips resolution, when allowPrivate is on', async () => {
    for (const url of ['https://localhost/hook', 'https://127.0.0.1:9000/x', 'https://[::1]/', 'https://10.0.0.1/', 'https://no-such-host.invalid/hook']) {
      expect(await checkTargetUrl(url, lenient)).toEqual({ ok: true });
    }
  });
});

describe('nonPublicReason', () => {
  const byte = fc.integer({ min: 0, max: 255 });
  const v4 = fc.tuple(byte, byte, byte, byte).map((b) => b.join('.'));

  it('judges an IPv4 address and its IPv4-mapped IPv6 form alike', () => {
    fc.assert(
      fc.property(v4, (ip) => {
        expect(nonPublicReason(`::ffff:${ip}`)).toBe(nonPublicReason(ip));
      }),
      { numRuns: 500 },
    );
  });

  it('refuses every address of 10/8, 127/8 and 192.168/16', () => {
    const inBlocks = fc.oneof(
      fc.tuple(byte, byte, byte).map(([a, b, c]) => `10.${a}.${b}.${c}`),
      fc.tuple(byte, byte, byte).map(([a, b, c]) => `127.${a}.${b}.${c}`),
      fc.tuple(byte, byte).map(([a, b]) => `192.168.${a}.${b}`),
    );
    fc.assert(
      fc.property(inBlocks, (ip) => {
        expect(nonPublicReason(ip)).not.toBeNull();
      }),
      { numRuns: 300 },
    );
  });

  it('says why an input is not an address at all', () => {
    expect(nonPublicReason('example.com')).toBe('not an IP address');
  });
});
