// Carrier A's webhooks: the voice URL (a call to one of our numbers, or the TwiML
// fetch of an outbound call that was answered), status callbacks and async AMD. Every
// request is verified with `X-Twilio-Signature` over PUBLIC_BASE_URL + path + query,
// keyed with the auth token of the account that owns the number (or call) it is
// about; anything else is 403 invalid_signature, with nothing written.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, type HandlerContext, type HandlerResult } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import { verifyTwilio } from '../../voice/carriers/twilio-signature.ts';
import { parseTwilioWebhook, TwilioWebhookError, type TwilioWebhookKind } from '../../voice/carriers/twilio-voice.ts';
import { connectStream, dialNumber, hangup, reject } from '../../voice/carriers/twiml.ts';
import { routeInbound } from '../../actors/calls/inbound.ts';
import { createPrecallGate } from '../../actors/calls/precall-gate.ts';
import { MEDIA_PATHS } from '../media-ws.ts';

const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';
const xml = (body: string): HandlerResult => ({ status: 200, body, contentType: 'text/xml' });

const DESCRIPTIONS: Record<TwilioWebhookKind, string> = {
  voice:
    'Without `cid`: a call to one of our numbers. Answered with `<Connect><Stream>` to the media websocket (a one-time `token` parameter), ' +
    'or `<Reject/>` (no agent, inactive agent, inbound disabled: recorded failed/failed) or `<Reject reason="busy"/>` (over the concurrency ' +
    'limit: recorded busy/concurrency_limit). When a pre-call URL is set (the number’s, else its agent’s) it is asked first, within 3 s: ' +
    '`reject` is answered `<Reject/>` (recorded canceled/precall_rejected), `transfer` `<Dial><Number>` (recorded completed/transferred). ' +
    'With `cid`: the answered outbound call fetching its TwiML (a call no longer live gets `<Hangup/>`).',
  status: 'Call progress; moves the call on. An unknown call is acknowledged and ignored.',
  amd: 'Asynchronous answering-machine detection; with `amd_enabled` a machine ends the call as voicemail_detected. An unknown call is ignored.',
};

export function carrierTwilioRoutes({ storage, config, clock, calls }: AppDeps) {
  const gate = createPrecallGate({ storage, allowPrivate: config.allowPrivateNetworkTargets, clock });
  const mediaUrl = config.publicBaseUrl.replace(/^http(s?):\/\//i, (_m, s: string) => `ws${s.toLowerCase()}://`) + MEDIA_PATHS.twilio;

  /** The number the request must be signed for: the call's own number, or ours among To/From. */
  function numberFor(cid: string | null, form: URLSearchParams): PhoneNumberRow | undefined {
    if (cid !== null) {
      const ctx = calls.contextOf(cid);
      const known = ctx ? { account: ctx.accountId, number: ctx.phoneNumber } : undefined;
      const row = known ? undefined : storage.calls.getByInternalId(cid);
      const account = known?.account ?? row?.account_id;
      const number = known?.number ?? row?.phone_number ?? null;
      if (account !== undefined && number !== null) return storage.numbers.get(account, number);
    }
    for (const field of ['To', 'From']) {
      const value = form.get(field);
      const row = value ? storage.calls.findNumber(value) : undefined;
      if (row) return row;
    }
    return undefined;
  }

  async function handle(kind: TwilioWebhookKind, ctx: HandlerContext<unknown, unknown>): Promise<HandlerResult> {
    const raw = ctx.body instanceof Buffer ? ctx.body.toString('utf8') : '';
    const form = new URLSearchParams(raw);
    const cid = ctx.searchParams.get('cid') || null;
    const number = numberFor(cid, form);
    const query = ctx.searchParams.toString();
    const url = `${config.publicBaseUrl}${ctx.path}${query ? `?${query}` : ''}`;
    const token = number && number.provider === 'twilio' ? calls.voices.twilioAuthToken(number) : null;
    if (!number || token === null || !verifyTwilio(token, url, form, ctx.headers['x-twilio-signature'])) throw new ApiError('invalid_signature');

    let hook;
    try {
      hook = parseTwilioWebhook(kind, form, ctx.searchParams, clock());
    } catch (err) {
      if (err instanceof TwilioWebhookError) throw new ApiError('invalid_request', err.message, { field: err.field });
      throw err;
    }
    if (hook.kind === 'incoming') {
      // The pre-call gate (≤ 3 s) runs inside this request: the carrier waits about 15 s for TwiML.
      const incoming = { number, provider: 'twilio' as const, carrierCallId: hook.carrierCallId, from: hook.from, to: hook.to, at: clock() };
      const decision = await routeInbound(calls, storage, incoming, { gate, log: ctx.log, clock });
      if (decision.kind === 'answer') return xml(connectStream(mediaUrl, { token: decision.mediaToken }));
      if (decision.kind === 'transfer') return xml(dialNumber(decision.to));
      return xml(reject(decision.kind === 'busy' ? 'busy' : 'rejected'));
    }
    if (hook.kind === 'ignored') return xml(kind === 'voice' ? hangup() : EMPTY_TWIML);
    const id = hook.callId ?? calls.findByCarrierCallId(number.account_id, hook.carrierCallId);
    // The carrier's call id rides along: a call may end before its dial's answer names it.
    const result = id === null ? 'not_live' : calls.send(id, { ...hook.event, carrierCallId: hook.carrierCallId });
    // Not recorded (the database refused the commit): 500, so the carrier sends it again.
    if (result === 'commit_failed') throw new ApiError('server_error', 'The event could not be recorded; send it again.');
    const delivered = result === 'taken';
    if (kind !== 'voice') return xml(EMPTY_TWIML);
    // The answered outbound call asks what to do: stream to us while its actor is live.
    return xml(delivered && id !== null && calls.isLive(id) ? connectStream(mediaUrl, { token: calls.mediaTokenOf(id) }) : hangup());
  }

  const route = (kind: TwilioWebhookKind) =>
    defineRoute({
      method: 'POST',
      path: `/carrier/twilio/${kind}`,
      summary: `Carrier A ${kind} webhook`,
      tag: 'Carrier webhooks',
      auth: 'none',
      rateLimit: 'carrier',
      rawBody: true,
      query: z.object({ cid: z.string().optional().meta({ description: 'Our internal call id, on the URLs of outbound calls.' }) }).loose(),
      responses: { 200: { description: `${DESCRIPTIONS[kind]} TwiML (text/xml).` } },
      errors: ['invalid_signature', 'invalid_request'],
      // Not wrapped in the pipeline's transaction: each call actor commits its own
      // transitions, and their effects must start only after those commits are final.
      async: true,
      handler: async (ctx) => handle(kind, ctx as HandlerContext<unknown, unknown>),
    });

  return [route('voice'), route('status'), route('amd')];
}
