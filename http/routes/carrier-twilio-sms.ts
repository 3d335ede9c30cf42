// Carrier A's SMS webhooks: a text to one of our numbers (`/carrier/twilio/sms`, the
// number's SmsUrl set at import) and the delivery status of a text we sent
// (`/carrier/twilio/sms/status`, each message's StatusCallback). Both are verified with
// `X-Twilio-Signature` keyed with the auth token of the account owning the number (the
// text's `To`, the status's `From`); anything else is 403 invalid_signature with nothing
// written. Received texts are answered with empty TwiML: replies and STOP confirmations
// are sent through the number's paced sender like every text, never inline.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, type HandlerContext, type HandlerResult } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { verifyTwilio } from '../../voice/carriers/twilio-signature.ts';
import { parseTwilioSms, parseTwilioSmsStatus } from '../../voice/carriers/sms-webhooks.ts';

const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';
const xml = (body: string): HandlerResult => ({ status: 200, body, contentType: 'text/xml' });

export function carrierTwilioSmsRoutes({ storage, config, calls, sms }: AppDeps) {
  function verified(ctx: HandlerContext<unknown, unknown>, ours: 'To' | 'From') {
    const raw = ctx.body instanceof Buffer ? ctx.body.toString('utf8') : '';
    const form = new URLSearchParams(raw);
    const value = form.get(ours);
    const number = value ? storage.calls.findNumber(value) : undefined;
    const query = ctx.searchParams.toString();
    const url = `${config.publicBaseUrl}${ctx.path}${query ? `?${query}` : ''}`;
    const token = number && number.provider === 'twilio' ? calls.voices.twilioAuthToken(number) : null;
    if (!number || token === null || !verifyTwilio(token, url, form, ctx.headers['x-twilio-signature'])) throw new ApiError('invalid_signature');
    return { number, form };
  }

  const common = { tag: 'Carrier webhooks', auth: 'none' as const, rateLimit: 'carrier' as const, rawBody: true, async: true, query: z.object({}).loose(), errors: ['invalid_signature' as const, 'server_error' as const] };

  return [
    defineRoute({
      ...common,
      method: 'POST',
      path: '/carrier/twilio/sms',
      summary: 'Carrier A incoming SMS',
      responses: {
        200: {
          description:
            'Stored (a repeat of the same MessageSid once). STOP, STOPALL, UNSUBSCRIBE, CANCEL, END or QUIT unsubscribes the sender from this number, START or UNSTOP resubscribes, each confirmed by text; ' +
            'otherwise, with sms_reply_enabled, the number’s SMS agent answers. Empty TwiML.',
        },
      },
      handler: async (ctx) => {
        const { number, form } = verified(ctx as HandlerContext<unknown, unknown>, 'To');
        const hook = parseTwilioSms(form);
        if (hook.kind === 'received') {
          try {
            sms.receive(number, { from: hook.from, body: hook.body, carrierMessageId: hook.carrierMessageId });
          } catch (err) {
            ctx.log.error({ err }, 'storing a received SMS failed');
            // Not stored: 500, so the carrier sends it again.
            throw new ApiError('server_error', 'The message could not be stored; send it again.');
          }
        }
        return xml(EMPTY_TWIML);
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: '/carrier/twilio/sms/status',
      summary: 'Carrier A SMS delivery status',
      responses: { 200: { description: 'The message moves on (sent, delivered, undelivered, failed; never back). Unknown messages are acknowledged and ignored. Empty TwiML.' } },
      handler: async (ctx) => {
        const { number, form } = verified(ctx as HandlerContext<unknown, unknown>, 'From');
        const hook = parseTwilioSmsStatus(form);
        if (hook.kind === 'status') sms.status(number, hook.carrierMessageId, hook.status, { code: hook.errorCode, message: hook.errorMessage });
        return xml(EMPTY_TWIML);
      },
    }),
  ];
}
