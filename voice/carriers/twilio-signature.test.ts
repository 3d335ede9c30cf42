// Carrier A's webhook signature against the fixed vectors of the carrier's own helper
// library: twilio/twilio-node, spec/validation.spec.js ("Request validation"), auth token
// "12345", URL https://mycompany.com/myapp.php?foo=1&bar=2 and the call parameters below.

import { describe, expect, it } from 'vitest';
import { signTwilio, verifyTwilio } from './twilio-signature.ts';

const TOKEN = '12345';
const URL_ = 'https://mycompany.com/myapp.php?foo=1&bar=2';
const PARAMS = { CallSid: 'CA1234567890ABCDE', Caller: '+14158675309', Digits: '1234', From: '+14158675309', To: '+18005551212' };
const SIGNATURE = 'RSOYDt4T1cUTdK1PDd93/VVr8B8=';

describe('signTwilio', () => {
  it('computes the carrier library vector', () => {
    expect(signTwilio(TOKEN, URL_, PARAMS)).toBe(SIGNATURE);
  });

  it('does not depend on the order the parameters come in', () => {
    const reversed = Object.fromEntries(Object.entries(PARAMS).reverse());
    expect(signTwilio(TOKEN, URL_, reversed)).toBe(SIGNATURE);
    const form = new URLSearchParams(Object.entries(PARAMS).reverse());
    expect(signTwilio(TOKEN, URL_, form)).toBe(SIGNATURE);
  });

  it('signs repeated keys once per distinct value, sorted (library vectors)', () => {
    expect(signTwilio(TOKEN, URL_, { 'MessagingBinding.Address': ['+1325xxxxxxx', '+1415xxxxxxx'] })).toBe('83O6e2vORAoJHUNzJjDWN1jz+BA=');
    expect(signTwilio(TOKEN, URL_, { 'MessagingBinding.Address': ['+1415xxxxxxx', '+1325xxxxxxx'] })).toBe('83O6e2vORAoJHUNzJjDWN1jz+BA=');
    const repeated = new URLSearchParams([
      ['Sid', 'CA123'],
      ['SidAccount', 'AC123'],
      ['Digits', '5678'],
      ['Digits', '1234'],
      ['Digits', '1234'],
    ]);
    expect(signTwilio(TOKEN, URL_, repeated)).toBe('IK+Dwps556ElfBT0I3Rgjkr1wJU=');
  });

  it('skips undefined values and refuses a relative URL', () => {
    expect(signTwilio(TOKEN, URL_, { ...PARAMS, Extra: undefined })).toBe(SIGNATURE);
    expect(() => signTwilio(TOKEN, '/carrier/twilio/voice', PARAMS)).toThrow(TypeError);
  });
});

describe('verifyTwilio', () => {
  it('accepts the library vector and a signature it made itself', () => {
    expect(verifyTwilio(TOKEN, URL_, PARAMS, SIGNATURE)).toBe(true);
    const url = 'https://switchboard.test/carrier/twilio/status?cid=call_abc';
    const form = { CallSid: 'CA' + 'f'.repeat(32), CallStatus: 'ringing', StatusCallbackEvent: ['ringing', 'answered'] };
    expect(verifyTwilio('t0k3n', url, form, signTwilio('t0k3n', url, form))).toBe(true);
  });

  it('refuses a wrong token, a changed parameter, an added parameter, a changed URL or query', () => {
    expect(verifyTwilio('54321', URL_, PARAMS, SIGNATURE)).toBe(false);
    expect(verifyTwilio(TOKEN, URL_, { ...PARAMS, Digits: '9999' }, SIGNATURE)).toBe(false);
    expect(verifyTwilio(TOKEN, URL_, { ...PARAMS, CallStatus: 'completed' }, SIGNATURE)).toBe(false);
    expect(verifyTwilio(TOKEN, 'https://mycompany.com/myapp.php?foo=1&bar=3', PARAMS, SIGNATURE)).toBe(false);
    expect(verifyTwilio(TOKEN, 'https://evil.example/myapp.php?foo=1&bar=2', PARAMS, SIGNATURE)).toBe(false);
    expect(verifyTwilio(TOKEN, 'http://mycompany.com/myapp.php?foo=1&bar=2', PARAMS, SIGNATURE)).toBe(false);
  });

  it('refuses a missing, empty, truncated or non-base64 signature, an empty token and a relative URL', () => {
    expect(verifyTwilio(TOKEN, URL_, PARAMS, undefined)).toBe(false);
    expect(verifyTwilio(TOKEN, URL_, PARAMS, null)).toBe(false);
    expect(verifyTwilio(TOKEN, URL_, PARAMS, '')).toBe(false);
    expect(verifyTwilio(TOKEN, URL_, PARAMS, SIGNATURE.slice(0, -1))).toBe(false);
    expect(verifyTwilio(TOKEN, URL_, PARAMS, 'WRONG_SIGNATURE')).toBe(false);
    expect(verifyTwilio('', URL_, PARAMS, SIGNATURE)).toBe(false);
    expect(verifyTwilio(TOKEN, '/myapp.php?foo=1&bar=2', PARAMS, SIGNATURE)).toBe(false);
  });

  // The library's port vectors: the carrier signs with or without the port, inconsistently.
  it('accepts the URL without its port and with the default port made explicit (library vectors)', () => {
    expect(verifyTwilio(TOKEN, 'https://mycompany.com:1234/myapp.php?foo=1&bar=2', PARAMS, SIGNATURE)).toBe(true);
    expect(verifyTwilio(TOKEN, 'http://mycompany.com:1234/myapp.php?foo=1&bar=2', PARAMS, 'Zmvh+3yNM1Phv2jhDCwEM3q5ebU=')).toBe(true);
    expect(verifyTwilio(TOKEN, URL_, PARAMS, 'kvajT1Ptam85bY51eRf/AJRuM3w=')).toBe(true);
    expect(verifyTwilio(TOKEN, 'http://mycompany.com/myapp.php?foo=1&bar=2', PARAMS, '0ZXoZLH/DfblKGATFgpif+LLRf4=')).toBe(true);
    expect(verifyTwilio(TOKEN, 'https://mycompany.com:443/myapp.php?foo=1&bar=2', PARAMS, SIGNATURE)).toBe(true);
  });

  it('accepts URLs with credentials and special characters (library vectors)', () => {
    const withCreds = 'https://user:pass@mycompany.com/myapp.php?foo=1&bar=2';
    expect(verifyTwilio(TOKEN, withCreds, PARAMS, 'CukzLTc1tT5dXEDIHm/tKBanW10=')).toBe(true);
    expect(verifyTwilio(TOKEN, withCreds, PARAMS, 'ZQFR1PTIZXF2MXB8ZnKCvnnA+rI=')).toBe(true);
    expect(verifyTwilio(TOKEN, 'https://user@mycompany.com/myapp.php?foo=1&bar=2', PARAMS, '2YRLlVAflCqxaNicjMpJcSTgzSs=')).toBe(true);
    expect(verifyTwilio(TOKEN, `${URL_}&Body=It's+amazing`, PARAMS, 'dsq4Ehbj6cs+KdTkpF5sSSplOWw=')).toBe(true);
  });

  it('accepts a signature over the URL as given or as normalised (a quote in the query as %27)', () => {
    const plain = "https://example.com/path?test=param'WithQuote";
    const escaped = 'https://example.com/path?test=param%27WithQuote';
    expect(verifyTwilio(TOKEN, plain, {}, signTwilio(TOKEN, plain))).toBe(true);
    expect(verifyTwilio(TOKEN, plain, {}, signTwilio(TOKEN, escaped))).toBe(true);
    expect(verifyTwilio(TOKEN, escaped, {}, signTwilio(TOKEN, escaped))).toBe(true);
    expect(verifyTwilio(TOKEN, plain, {}, signTwilio(TOKEN, 'https://example.com/path?test=param%22WithQuote'))).toBe(false);
  });

  it('verifies a media websocket handshake signed over its wss:// URL with no parameters', () => {
    const url = 'wss://switchboard.test/carrier/twilio/media';
    const signature = signTwilio(TOKEN, url);
    expect(verifyTwilio(TOKEN, url, {}, signature)).toBe(true);
    expect(verifyTwilio(TOKEN, 'wss://switchboard.test:443/carrier/twilio/media', {}, signature)).toBe(true);
    expect(verifyTwilio(TOKEN, 'wss://switchboard.test/carrier/twilio/other', {}, signature)).toBe(false);
  });
});
