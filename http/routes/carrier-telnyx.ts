// Carrier B's call events: `POST /carrier/telnyx/events/{token}`. The unguessable token
// names one of our numbers, but it is not enough to route by: a Call Control application
// has ONE webhook URL, so when several numbers (of one account or several) share an
// application, the events of all of them arrive on the token of whichever number was
// imported last. An event is therefore routed by the number it names:
// - an incoming call.initiated: the payload's `to`;
// - any other call event (either leg): the live call its client_state, else its carrier
//   call id, names, and that call's own number, which must belong to the call's account;
// - an event of no live call, or one not acted on: the token's number (acknowledged, nothing done).
// The named number must be a carrier B number on the token's application (the same
// telnyx_connection_id), and the Ed25519 signature (300 s window) must verify with THAT
// number's public key. The call is recorded in, and answered with the credentials of, the
// account that owns the named number. Everything else is 403 invalid_signature with
// nothing written: an unknown token, a bad or missing signature, a number stored without
// a public key (imported before the key was required), a named number we do not hold or
// that is on another application.
// Incoming calls are routed (answered with a media stream, refused busy, or refused);
// other events go to the call's actor.
import { acceptRecordingCallback } from '../../actors/outbox/recording-fetch.ts';
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, ok } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import type { PhoneNumberRow } from '../../storage/phone-numbers.ts';
import { verifyTelnyx } from '../../voice/carriers/telnyx-signature.ts';
import { parseTelnyxWebhook } from '../../voice/carriers/telnyx-voice.ts';
import { transferEventOf, type TelnyxWebhook } from '../../voice/carriers/telnyx-transfer-state.ts';
import { routeInbound } from '../../actors/calls/inbound.ts';
import { isTelnyxMessageEvent, parseTelnyxSms, type SmsWebhook } from '../../voice/carriers/sms-webhooks.ts';
import { createPrecallGate } from '../../actors/calls/precall-gate.ts';

const received = z.object({ received: z.literal(true) });

/** Whose key verifies an event, and the live call it moves on (null: nothing to move). */
interface Subject {
  number: PhoneNumberRow;
  callId: string | null;
}

export function carrierTelnyxRoutes({ storage, config, clock, calls, carrierKeys, sms }: AppDeps) {
  const gate = createPrecallGate({ storage, allowPrivate: config.allowPrivateNetworkTargets, clock });
  const connectionOf = (row: PhoneNumberRow): string | null => {
    const c = storage.numbers.openCredentials(row);
    return c.provider === 'telnyx' ? c.connection_id : null;
  };

  /** A number an event on `tokenNumber`'s URL may speak for: a carrier B number on the same application. */
  function onTokensApplication(tokenNumber: PhoneNumberRow, named: PhoneNumberRow): boolean {
    if (named.provider !== 'telnyx') return false;
    if (named.phone_number === tokenNumber.phone_number) return true;
    const app = connectionOf(named);
    return app !== null && app === connectionOf(tokenNumber);
  }

  /**
   * The number the event is about, or null when the token does not vouch for it.
   * Decision: a named number we do not hold, or one on another application, is answered
   * 403 invalid_signature rather than acknowledged and ignored. The signature may only
   * be checked with the named number's key, and such a number has no key this token lets
   * us use, so the event is unverifiable, which is what invalid_signature says; it is the
   * same answer as an unknown token, so it tells a token holder nothing about numbers
   * elsewhere; and the carrier lists it as a failed delivery, so a misconfigured
   * application (say, a number deleted here but still on it) shows in the customer's
   * carrier portal instead of calls silently left ringing. Nothing is written either way.
   */
  function subjectOf(hook: TelnyxWebhook, tokenNumber: PhoneNumberRow): Subject | null {
    if (hook.kind === 'ignored') return { number: tokenNumber, callId: null };
    if (hook.kind === 'incoming') {
      const named = storage.calls.findNumber(hook.to);
      return named && onTokensApplication(tokenNumber, named) ? { number: named, callId: null } : null;
    }
    if (hook.kind === 'recording') {
      // Comes after the call's end: the call is known by its row, live or not.
      const row = hook.callId === null ? undefined : storage.calls.getByInternalId(hook.callId);
      if (!row || row.phone_number === null) return { number: tokenNumber, callId: null };
      const named = storage.calls.findNumber(row.phone_number);
      return named && named.account_id === row.account_id && onTokensApplication(tokenNumber, named) ? { number: named, callId: hook.callId } : null;
    }
    const id = hook.callId ?? calls.findAnyByCarrierCallId(hook.carrierCallId);
    const ctx = id === null ? null : calls.contextOf(id);
    // A call we do not know is acknowledged and ignored, once signed for the token's number.
    if (id === null || ctx === null) return { number: tokenNumber, callId: null };
    // client_state is the carrier's echo of what we set, unverified so far: the call it
    // names must be on a number of its own account that this token's application carries.
    const named = storage.calls.findNumber(ctx.phoneNumber);
    return named && named.account_id === ctx.accountId && onTokensApplication(tokenNumber, named) ? { number: named, callId: id } : null;
  }

  /**
   * The number a message event is about: the recipient of a received text, the sender of a
   * text we sent; it must be a carrier B number on the token's application or account.
   */
  function smsSubjectOf(hook: SmsWebhook, tokenNumber: PhoneNumberRow): PhoneNumberRow | null {
    if (hook.kind === 'ignored') return tokenNumber;
    const phone = hook.kind === 'received' ? hook.to : storage.sms.byCarrierId('telnyx', hook.carrierMessageId)?.from_number;
    if (phone === undefined) return tokenNumber;
    const named = storage.calls.findNumber(phone);
    if (!named || named.provider !== 'telnyx') return null;
    return named.account_id === tokenNumber.account_id || onTokensApplication(tokenNumber, named) ? named : null;
  }

  function verifiedBy(number: PhoneNumberRow, raw: Buffer, headers: Record<string, string | undefined>, log: { warn: (o: object, m: string) => void }): void {
    const publicKey = calls.voices.telnyxPublicKey(number);
    if (publicKey === null) {
      log.warn({ account_id: number.account_id }, 'carrier B event refused: the number has no telnyx_public_key; import it again with the key');
      throw new ApiError('invalid_signature');
    }
    if (!verifyTelnyx(publicKey, raw, headers['telnyx-signature-ed25519'], headers['telnyx-timestamp'], Math.floor(clock() / 1000))) throw new ApiError('invalid_signature');
  }

  return [
    defineRoute({
      method: 'POST',
      path: '/carrier/telnyx/events/{token}',
      summary: 'Carrier B call events of the numbers on one Call Control application',
      tag: 'Carrier webhooks',
      auth: 'none',
      rateLimit: 'carrier',
      rawBody: true,
      async: true,
      responses: {
        200: {
          description:
            'Acknowledged. The token is the number whose import last set the Call Control application’s webhook URL, so events of every number on that ' +
            'application arrive here; each is routed by the number it names (an incoming `call.initiated`: its `to`; other call events: the call named by ' +
            '`client_state` or the carrier call id, and that call’s number), which must be a carrier B number on the same application, and the ' +
            '`telnyx-signature-ed25519` signature must verify with that number’s public key. ' +
            '`call.initiated` (incoming) is then answered at the carrier, with the credentials of the account owning the number called, with a ' +
            'bidirectional media stream (one-time token in the stream URL), refused busy over that account’s concurrency limit (recorded busy/concurrency_limit), ' +
            'or refused with a hang-up when the number has no agent, its agent is inactive or inbound is disabled (recorded failed/failed). ' +
            'When a pre-call URL is set (the number’s, else its agent’s) it is asked first, within 3 s, before the answer command: `reject` is ' +
            'refused with `reject` CALL_REJECTED (recorded canceled/precall_rejected), `transfer` handed on with the `transfer` command ' +
            '(recorded completed/transferred). ' +
            '`call.recording.saved` (a recording `record_start` asked for, recording_source provider) commits the fetch of its MP3 into DATA_DIR (a `recording.fetch` delivery), only for a call that asked to record and an https `recording_urls.mp3` whose address is public (checked again at connect; redirects only to URLs that pass the same check; kept only if it is MP3 audio). ' +
            'Messaging events (the number’s messaging profile points here too): `message.received` is a text to the number its `to` names (STOP/START and the SMS agent as on carrier A), ' +
            '`message.sent` / `message.finalized` move the text we sent on (sent, delivered, undelivered, failed); each verified with the named number’s key. ' +
            'Events of unknown calls are ignored. 403 invalid_signature, with nothing written: an unknown token, a missing, bad or stale signature, ' +
            'a number without a stored public key (imported before the key was required: import it again with telnyx_public_key), or an event naming ' +
            'a number not imported here or not on this token’s application.',
          schema: received,
        },
      },
      errors: ['invalid_signature', 'server_error'],
      handler: async ({ params, body, headers, log }) => {
        const raw = Buffer.isBuffer(body as unknown) ? (body as unknown as Buffer) : Buffer.alloc(0);
        const tokenNumber = storage.numbers.findByEventsToken(params['token'] ?? '');
        if (!tokenNumber || tokenNumber.provider !== 'telnyx') throw new ApiError('invalid_signature');

        const text = raw.toString('utf8');
        // Messaging events (the messaging profile's webhook points here too): the SMS system's.
        if (isTelnyxMessageEvent(text)) {
          const smsHook = parseTelnyxSms(text);
          const named = smsSubjectOf(smsHook, tokenNumber);
          if (named === null) throw new ApiError('invalid_signature');
          verifiedBy(named, raw, headers, log);
          try {
            if (smsHook.kind === 'received') sms.receive(named, { from: smsHook.from, body: smsHook.body, carrierMessageId: smsHook.carrierMessageId });
            else if (smsHook.kind === 'status') sms.status(named, smsHook.carrierMessageId, smsHook.status, { code: smsHook.errorCode, message: smsHook.errorMessage });
          } catch (err) {
            log.error({ err }, 'recording a carrier B message event failed');
            // Not recorded: 500, so the carrier sends it again.
            throw new ApiError('server_error', 'The event could not be recorded; send it again.');
          }
          return ok({ received: true });
        }
        // Parsed before it is verified only to learn which number's key verifies it (the
        // parser never throws and acts on nothing); nothing is done with it until then.
        const hook = parseTelnyxWebhook(text, clock());
        const subject = subjectOf(hook, tokenNumber);
        if (subject === null) throw new ApiError('invalid_signature');
        const { number } = subject;
        verifiedBy(number, raw, headers, log);

        if (hook.kind === 'ignored') return ok({ received: true });
        if (hook.kind === 'recording') {
          // The fetch is committed now and made by the outbox (actors/outbox/recording-fetch.ts), only for a
          // call that asked to record and an https link; a repeat adds nothing.
          if (subject.callId !== null) {
            const row = storage.calls.getByInternalId(subject.callId);
            if (row && row.carrier_call_id === hook.carrierCallId) {
              acceptRecordingCallback(storage, {
                accountId: row.account_id,
                internalId: subject.callId,
                url: hook.url,
                job: { provider: 'telnyx', duration_seconds: hook.seconds },
                now: clock(),
                sources: { twilioApiBase: config.twilioApiBase, allowPrivate: config.allowPrivateNetworkTargets },
              });
            }
          }
          return ok({ received: true });
        }
        if (hook.kind === 'event' || hook.kind === 'transfer') {
          const ctx = subject.callId === null ? null : calls.contextOf(subject.callId);
          // A transfer's steps (its target leg's events, the caller's bridge) are the transfer's, never the call's own end.
          const step = ctx === null ? null : transferEventOf(hook, ctx, clock());
          // The carrier's call id rides along: a call may end before its dial's answer names it.
          const event = step ?? (hook.kind === 'event' ? { ...hook.event, carrierCallId: hook.carrierCallId } : null);
          // Not recorded (the database refused the commit): 500, so the carrier sends it again.
          if (subject.callId !== null && event !== null && calls.send(subject.callId, event) === 'commit_failed') {
            throw new ApiError('server_error', 'The event could not be recorded; send it again.');
          }
          // A key press also reaches the call's conversation (keypad input, when dtmf_enabled is on).
          if (subject.callId !== null && hook.kind === 'event' && hook.event.type === 'DTMF') carrierKeys?.press(subject.callId, hook.event.digit);
          return ok({ received: true });
        }

        // The pre-call gate (≤ 3 s) is asked before any command: the call waits parked until then.
        const incoming = { number, provider: 'telnyx' as const, carrierCallId: hook.carrierCallId, from: hook.from, to: hook.to, at: clock() };
        const decision = await routeInbound(calls, storage, incoming, { gate, log, clock });
        const voice = calls.voices.telnyxFor(number);
        if (decision.kind === 'answer') {
          try {
            await voice.answerWithStream(hook.carrierCallId, { publicBaseUrl: config.publicBaseUrl, mediaToken: decision.mediaToken, callId: decision.callId });
          } catch (err) {
            // Not answered: end our side; the carrier's hang-up event (if any) finds it finished.
            log.warn({ err, call_id: decision.callId }, 'carrier B answer failed');
            calls.send(decision.callId, { type: 'HANGUP.REQUESTED', at: clock(), reason: 'agent_hangup' });
          }
        } else if (decision.kind === 'transfer') {
          // Recorded already (completed/transferred); the command id makes a repeat harmless.
          await voice.transfer(hook.carrierCallId, decision.to, `transfer-${decision.callId}`).catch((err: unknown) => log.warn({ err }, 'carrier B pre-call transfer failed'));
        } else {
          // The refusal is recorded already; the carrier ends an unanswered call on its own anyway.
          const refuse =
            decision.kind === 'busy' ? voice.rejectBusy(hook.carrierCallId) : decision.why === 'precall' ? voice.rejectCall(hook.carrierCallId) : voice.hangup(hook.carrierCallId);
          await refuse.catch((err: unknown) => log.warn({ err }, 'carrier B refusal failed'));
        }
        return ok({ received: true });
      },
    }),
  ];
}
