// Carrier B's call events, one URL per number: `/carrier/telnyx/events/{token}`. The
// unguessable token names the number; when the customer gave the account's public
// key, the Ed25519 signature (and its 300 s timestamp window) is checked too. An
// unknown token or a bad signature is 403 invalid_signature, with nothing written.
// Incoming calls are routed (answered with a media stream, refused busy, or refused);
// other events go to the call's actor by client_state or carrier call id.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, ok } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { verifyTelnyx } from '../../voice/carriers/telnyx-signature.ts';
import { parseTelnyxWebhook } from '../../voice/carriers/telnyx-voice.ts';
import { routeInbound } from '../../actors/inbound.ts';

const received = z.object({ received: z.literal(true) });

export function carrierTelnyxRoutes({ storage, config, clock, calls }: AppDeps) {
  return [
    defineRoute({
      method: 'POST',
      path: '/carrier/telnyx/events/{token}',
      summary: 'Carrier B call events of one number',
      tag: 'Carrier webhooks',
      auth: 'none',
      rateLimit: 'none',
      rawBody: true,
      async: true,
      responses: {
        200: {
          description:
            'Acknowledged. `call.initiated` (incoming) is answered at the carrier with a bidirectional media stream (one-time token in the stream URL), ' +
            'refused busy over the concurrency limit (recorded busy/concurrency_limit), or refused with a hang-up when the number has no agent, ' +
            'its agent is inactive or inbound is disabled (recorded failed/failed). Events of unknown calls are ignored. ' +
            'An unknown token answers 403 invalid_signature, like a bad signature: the token is the credential.',
          schema: received,
        },
      },
      errors: ['invalid_signature'],
      handler: async ({ params, body, headers, log }) => {
        const raw = Buffer.isBuffer(body as unknown) ? (body as unknown as Buffer) : Buffer.alloc(0);
        const number = storage.numbers.findByEventsToken(params['token'] ?? '');
        if (!number || number.provider !== 'telnyx') throw new ApiError('invalid_signature');
        const publicKey = calls.voices.telnyxPublicKey(number);
        if (publicKey !== null) {
          const nowSec = Math.floor(clock() / 1000);
          if (!verifyTelnyx(publicKey, raw, headers['telnyx-signature-ed25519'], headers['telnyx-timestamp'], nowSec)) {
            throw new ApiError('invalid_signature');
          }
        }

        const hook = parseTelnyxWebhook(raw.toString('utf8'), clock());
        if (hook.kind === 'ignored') return ok({ received: true });
        if (hook.kind === 'event') {
          const id = hook.callId ?? calls.findByCarrierCallId(number.account_id, hook.carrierCallId);
          // client_state is the carrier's echo of what we set; only a call of this number's account is trusted.
          if (id !== null && calls.contextOf(id)?.accountId === number.account_id) calls.send(id, hook.event);
          return ok({ received: true });
        }

        const decision = routeInbound(calls, storage, { number, provider: 'telnyx', carrierCallId: hook.carrierCallId, from: hook.from, to: hook.to, at: clock() });
        const voice = calls.voices.telnyxFor(number);
        if (decision.kind === 'answer') {
          try {
            await voice.answerWithStream(hook.carrierCallId, { publicBaseUrl: config.publicBaseUrl, mediaToken: decision.mediaToken, callId: decision.callId });
          } catch (err) {
            // Not answered: end our side; the carrier's hang-up event (if any) finds it finished.
            log.warn({ err, call_id: decision.callId }, 'carrier B answer failed');
            calls.send(decision.callId, { type: 'HANGUP.REQUESTED', at: clock(), reason: 'agent_hangup' });
          }
        } else {
          // The refusal is recorded already; the carrier ends an unanswered call on its own anyway.
          const refuse = decision.kind === 'busy' ? voice.rejectBusy(hook.carrierCallId) : voice.hangup(hook.carrierCallId);
          await refuse.catch((err: unknown) => log.warn({ err }, 'carrier B refusal failed'));
        }
        return ok({ received: true });
      },
    }),
  ];
}
