// The opt-out keywords carriers honour (contract.md 8) and the confirmations carriers
// usually send back (carrier A's default replies, which carrier B's match in substance).
// A keyword is the whole text, any case, surrounding spaces and punctuation ignored:
// "Stop." opts out, "please don't stop" does not.
const STOP = new Set(['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT']);
const START = new Set(['START', 'UNSTOP']);

export const OPT_OUT_CONFIRMATION = 'You have successfully been unsubscribed. You will not receive any more messages from this number. Reply START to resubscribe.';
export const OPT_IN_CONFIRMATION = 'You have successfully been re-subscribed to messages from this number. Reply HELP for help. Reply STOP to unsubscribe. Msg&Data Rates May Apply.';

export function keywordOf(body: string): 'stop' | 'start' | null {
  const word = body.trim().replace(/^[\s\p{P}]+|[\s\p{P}]+$/gu, '').toUpperCase();
  if (STOP.has(word)) return 'stop';
  if (START.has(word)) return 'start';
  return null;
}
