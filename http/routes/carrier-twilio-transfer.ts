// Carrier A's webhooks of a transfer the agent made (voice/carriers/twilio-transfer.ts):
// the target's answer (`<Number statusCallback>`), the whisper fetch (`<Number url>`) and
// the dial's outcome (`<Dial action>`). Each URL carries `cid` (our call) and `attempt`
// (which transfer of it); each request is verified with `X-Twilio-Signature` keyed with
// the auth token of the call's number, like the other carrier A endpoints (403
// invalid_signature otherwise, nothing written).
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, type HandlerContext, type HandlerResult } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import type { CallEvent } from '../../machines/call-events.ts';
import { verifyTwilio } from '../../voice/carriers/twilio-signature.ts';
import { connectStream, empty, hangup, say } from '../../voice/carriers/twiml.ts';
import { failureOf } from '../../voice/carriers/call-transfer.ts';
import type { TwilioTransferHook } from '../../voice/carriers/twilio-transfer.ts';
import { newMediaToken } from '../../actors/calls/call-system.ts';
import { MEDIA_PATHS } from '../media-ws.ts';

const xml = (body: string): HandlerResult => ({ status: 200, body, contentType: 'text/xml' });

const query = z
  .object({
    cid: z.string().min(1).meta({ description: 'Our internal call id.' }),
    attempt: z.string().regex(/^[1-9]\d{0,5}$/).meta({ description: 'Which transfer of the call (1, 2, …).' }),
  })
  .loose();

const DESCRIPTIONS: Record<TwilioTransferHook, string> = {
  'transfer-status':
    'The transfer target’s leg answered (`<Number statusCallbackEvent="answered">`): the handoff. The call ends `transferred` now and ' +
    '`charged_minutes` stops here; the caller and the target talk on at the carrier. Answered with an empty TwiML document.',
  whisper:
    'A warm transfer’s target answered and asks what to hear (`<Number url>`): `<Say>` with the whisper (`transfer_whisper`, or the ' +
    'briefing the agent wrote), heard by the target only; the two are connected after it. The answer is the handoff: the call ends ' +
    '`transferred` now and `charged_minutes` stops here.',
  'transfer-done':
    'The transfer’s `<Dial>` ended (`<Dial action>`, `DialCallStatus`). `busy`, `no-answer`, `failed` or `canceled`: the caller goes ' +
    'back to the agent, who says so: answered with `<Connect><Stream>` to a new media stream. `completed`: the bridged call is over: `<Hangup/>`.',
};

export function carrierTwilioTransferRoutes({ storage, config, clock, calls }: AppDeps) {
  const mediaUrl = config.publicBaseUrl.replace(/^http(s?):\/\//i, (_m, s: string) => `ws${s.toLowerCase()}://`) + MEDIA_PATHS.twilio;

  /** The call's own number: its auth token signs every webhook of the call. */
  function numberOf(cid: string): PhoneNumberRow | undefined {
    const ctx = calls.contextOf(cid);
    const row = ctx ? undefined : storage.calls.getByInternalId(cid);
    const account = ctx?.accountId ?? row?.account_id;
    const number = ctx?.phoneNumber ?? row?.phone_number ?? null;
    return account !== undefined && number !== null ? storage.numbers.get(account, number) : undefined;
  }

  function deliver(cid: string, event: CallEvent): void {
    if (calls.send(cid, event) === 'commit_failed') throw new ApiError('server_error', 'The event could not be recorded; send it again.');
  }

  function handle(hook: TwilioTransferHook, ctx: HandlerContext<unknown, unknown>): HandlerResult {
    const form = new URLSearchParams(ctx.body instanceof Buffer ? ctx.body.toString('utf8') : '');
    const cid = ctx.searchParams.get('cid') ?? '';
    const attempt = Number(ctx.searchParams.get('attempt'));
    const number = numberOf(cid);
    const token = number && number.provider === 'twilio' ? calls.voices.twilioAuthToken(number) : null;
    const url = `${config.publicBaseUrl}${ctx.path}?${ctx.searchParams.toString()}`;
    if (!number || token === null || !verifyTwilio(token, url, form, ctx.headers['x-twilio-signature'])) throw new ApiError('invalid_signature');

    const call = calls.contextOf(cid);
    const running = call !== null && call.transfer?.attempt === attempt && call.transfer.outcome === 'pending';
    const at = clock();

    if (hook === 'whisper') {
      // Fetched when the target answers: read the whisper, then hand the caller over.
      const whisper = running ? call.transfer!.whisper : null;
      if (running) deliver(cid, { type: 'TRANSFER.CONNECTED', at, attempt });
      return xml(whisper ? say(whisper) : empty());
    }

    if (hook === 'transfer-status') {
      const status = form.get('CallStatus') ?? '';
      if (running && (status === 'in-progress' || status === 'answered')) deliver(cid, { type: 'TRANSFER.CONNECTED', at, attempt });
      return xml(empty());
    }

    // transfer-done: the dial's outcome.
    const status = form.get('DialCallStatus') ?? '';
    if (status === 'completed' || status === 'answered') {
      // The answer's own callback was lost: it answered `DialCallDuration` seconds before now.
      const talked = Number(form.get('DialCallDuration'));
      if (running) deliver(cid, { type: 'TRANSFER.CONNECTED', at: Math.max(0, at - (Number.isFinite(talked) ? talked * 1000 : 0)), attempt });
      return xml(hangup());
    }
    if (running) deliver(cid, { type: 'TRANSFER.FAILED', at, attempt, reason: failureOf(status), mediaBack: true });
    // Back with the agent (whichever event told the call first): a new stream, with a new one-time token.
    const after = calls.contextOf(cid);
    const back = after !== null && calls.isLive(cid) && after.hangupReason === null && after.transfer?.attempt === attempt && after.transfer.outcome === 'failed';
    if (!back) return xml(hangup());
    const mediaToken = newMediaToken();
    if (!storage.calls.renewMediaToken(after.accountId, cid, mediaToken)) return xml(hangup());
    return xml(connectStream(mediaUrl, { token: mediaToken }));
  }

  const route = (hook: TwilioTransferHook) =>
    defineRoute({
      method: 'POST',
      path: `/carrier/twilio/${hook}`,
      summary: `Carrier A transfer webhook: ${hook}`,
      tag: 'Carrier webhooks',
      auth: 'none',
      rateLimit: 'carrier',
      rawBody: true,
      query,
      responses: { 200: { description: `${DESCRIPTIONS[hook]} TwiML (text/xml).` } },
      errors: ['invalid_signature', 'invalid_request'],
      // Not wrapped in the pipeline's transaction: the call actor commits its own transitions.
      async: true,
      handler: async (ctx) => handle(hook, ctx as HandlerContext<unknown, unknown>),
    });

  return [route('transfer-status'), route('whisper'), route('transfer-done')];
}
