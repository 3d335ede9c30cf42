// The router on its own: static segments beat parameters, parameters are decoded,
// and a known path with another method is told apart from an unknown path.
import { describe, expect, it } from 'vitest';
import { Router } from './router.ts';

function router() {
  const r = new Router<string>();
  r.add('GET', '/v1/calls', 'list');
  r.add('GET', '/v1/calls/{call_id}', 'get');
  r.add('DELETE', '/v1/calls/{call_id}', 'delete');
  r.add('GET', '/v1/calls/batch', 'batches');
  r.add('POST', '/v1/calls/batch/{campaign_id}/launch', 'launch');
  r.add('PUT', '/v1/phone-numbers/{phone_number}/callers/{caller_number}', 'caller');
  return r;
}

describe('Router', () => {
  it('matches static routes before parameters', () => {
    expect(router().match('GET', '/v1/calls/batch')).toMatchObject({ kind: 'found', value: 'batches', params: {} });
    expect(router().match('GET', '/v1/calls/CA123')).toMatchObject({ kind: 'found', value: 'get', params: { call_id: 'CA123' } });
  });

  it('lets a static path win for every method, and falls back to a parameter only below a dead end', () => {
    const r = router();
    expect(r.match('DELETE', '/v1/calls/batch')).toMatchObject({ kind: 'method_not_allowed', allowed: ['GET'] });
    expect(r.match('POST', '/v1/calls/batch/batch_1/launch')).toMatchObject({ value: 'launch', params: { campaign_id: 'batch_1' } });
  });

  it('URL-decodes parameters: %2B is +', () => {
    const m = router().match('PUT', '/v1/phone-numbers/%2B14155550123/callers/%2B14155550999');
    expect(m).toMatchObject({ kind: 'found', params: { phone_number: '+14155550123', caller_number: '+14155550999' } });
  });

  it('keeps a parameter with a bad escape as it was', () => {
    expect(router().match('GET', '/v1/calls/%E0%A4%A')).toMatchObject({ params: { call_id: '%E0%A4%A' } });
  });

  it('tells 405 from 404', () => {
    expect(router().match('POST', '/v1/calls/CA1')).toEqual({ kind: 'method_not_allowed', allowed: ['GET', 'DELETE'], pattern: '/v1/calls/{call_id}' });
    expect(router().match('GET', '/v1/nothing')).toEqual({ kind: 'not_found' });
    expect(router().match('GET', '/v1/calls/a/b/c')).toEqual({ kind: 'not_found' });
  });

  it('tolerates a trailing slash and refuses duplicate registrations', () => {
    const r = router();
    expect(r.match('GET', '/v1/calls/')).toMatchObject({ kind: 'found', value: 'list' });
    expect(() => r.add('GET', '/v1/calls', 'again')).toThrow(/twice/);
    expect(() => r.add('GET', '/v1/calls/{other}/x', 'x')).toThrow(/clashes/);
  });
});
