// A call's texts (actors/agent/engine-sms.ts) handed to the SMS system: the call's number
// is read with the call's own account, a person who texted STOP to it is refused before
// anything is queued (so the model can say so instead of promising a text), and the
// text is committed and paced like every other (sms-system.ts `sendFromCall`). The
// outcome is what the model is told; content is never logged.
import type { Logger } from 'pino';
import type { Storage } from '../../storage/index.ts';
import type { SmsSystem } from '../sms/sms-system.ts';
import type { CallTexts } from './engine-sms.ts';

const E164 = /^\+[1-9]\d{6,14}$/;

export function createCallTexts(deps: { storage: Pick<Storage, 'numbers' | 'smsOptOuts'>; sms: Pick<SmsSystem, 'sendFromCall'>; log: Logger }): CallTexts {
  const { storage, sms, log } = deps;
  return {
    send(m) {
      const refuse = (reason: string, error: string) => {
        log.warn({ call_id: m.callId, origin: m.origin, reason }, 'a text of a call was not sent');
        return { ok: false as const, error };
      };
      // A withheld or foreign caller id ("anonymous", a short code) cannot be texted.
      if (!E164.test(m.to)) return refuse('no_number', 'the person’s phone number is not known, so they cannot be texted; give the details aloud');
      const number = storage.numbers.get(m.accountId, m.phoneNumber);
      if (!number) return refuse('number_gone', 'this phone line cannot send texts now; give the details aloud');
      if (storage.smsOptOuts.isOptedOut(m.accountId, m.phoneNumber, m.to)) {
        return refuse('recipient_unsubscribed', 'the person has opted out of texts from this number (they texted STOP), so nothing was sent; give the details aloud');
      }
      try {
        const messageId = sms.sendFromCall({ accountId: m.accountId, number, to: m.to, body: m.body, agentId: m.agentId, callId: m.callId, origin: m.origin });
        return { ok: true, messageId };
      } catch (err) {
        log.error({ err, call_id: m.callId, origin: m.origin }, 'queueing a text of a call failed');
        return { ok: false, error: 'the text could not be sent; give the details aloud' };
      }
    },
  };
}
