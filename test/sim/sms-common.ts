// What the two carrier simulators' messaging share: the record a test judges sends by
// (`sim.messages.sent()`), and how many parts a text travels in, which both carriers
// report on the message (carrier A `num_segments`, carrier B `parts`).

/** One outbound message the carrier accepted (and will try to deliver), in acceptance order. */
export interface SimSentMessage {
  /** The carrier's id: carrier A the `SM…` sid, carrier B the message id (a UUID). */
  readonly sid: string;
  readonly from: string;
  readonly to: string;
  readonly body: string;
  /** When the carrier accepted it (the sim's clock, ms). */
  readonly at: number;
  /** The message's status now: it moves on as the status callbacks / events go out. */
  readonly status: string;
}

// GSM 03.38: the basic table (one septet a character) and its extension (two septets).
const GSM_BASIC = new Set(
  "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà",
);
const GSM_EXTENDED = new Set('^{}\\[~]|€\f');

/**
 * Parts of an SMS: GSM-7 160 septets in one part, 153 a part when concatenated; any
 * other character makes it UCS-2, 70 UTF-16 units in one part, 67 a part otherwise.
 */
export function smsParts(text: string): { encoding: 'GSM-7' | 'UCS-2'; parts: number } {
  let septets = 0;
  for (const ch of text) {
    if (GSM_BASIC.has(ch)) septets += 1;
    else if (GSM_EXTENDED.has(ch)) septets += 2;
    else return { encoding: 'UCS-2', parts: text.length <= 70 ? 1 : Math.ceil(text.length / 67) };
  }
  return { encoding: 'GSM-7', parts: septets <= 160 ? 1 : Math.ceil(septets / 153) };
}

/** The longest text both carriers accept in one request (characters). */
export const MAX_SMS_CHARS = 1600;

export const E164 = /^\+[1-9]\d{6,14}$/;

/** Resolves true after `ms`, false at once if `signal` aborts (the sim closing). */
export function simSleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
