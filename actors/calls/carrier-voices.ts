// The carrier client of one imported number, built from its decrypted credentials
// (they are opened for the request at hand and never kept). Carrier A numbers get a
// CarrierVoice; carrier B numbers the TelnyxVoice, which also answers and refuses calls.
import type { Config } from '../../config.ts';
import type { PhoneNumberRow, PhoneNumbersRepo } from '../../storage/phone-numbers.ts';
import { createTelnyxVoice, type TelnyxVoice } from '../../voice/carriers/telnyx-voice.ts';
import { createTwilioVoice } from '../../voice/carriers/twilio-voice.ts';
import type { CarrierVoice } from '../../voice/carriers/voice.ts';

export interface CarrierVoices {
  /** The number's carrier client; throws when its credentials cannot be opened. */
  voiceFor(row: PhoneNumberRow): CarrierVoice;
  telnyxFor(row: PhoneNumberRow): TelnyxVoice;
  /** Carrier A's auth token of the number's account, for webhook signatures; null for carrier B. */
  twilioAuthToken(row: PhoneNumberRow): string | null;
  /**
   * Carrier B's Ed25519 public key of the number's account; null for a carrier A number and
   * for one imported before the key was required (whose events are then refused).
   */
  telnyxPublicKey(row: PhoneNumberRow): string | null;
}

export function createCarrierVoices(numbers: PhoneNumbersRepo, config: Pick<Config, 'twilioApiBase' | 'telnyxApiBase'>): CarrierVoices {
  function telnyxFor(row: PhoneNumberRow): TelnyxVoice {
    const c = numbers.openCredentials(row);
    if (c.provider !== 'telnyx') throw new Error('not a carrier B number');
    return createTelnyxVoice({ baseUrl: config.telnyxApiBase, apiKey: c.api_key, connectionId: c.connection_id });
  }
  return {
    voiceFor(row) {
      const c = numbers.openCredentials(row);
      if (c.provider === 'twilio') return createTwilioVoice({ baseUrl: config.twilioApiBase, accountSid: c.account_sid, authToken: c.auth_token });
      return telnyxFor(row);
    },
    telnyxFor,
    twilioAuthToken(row) {
      const c = numbers.openCredentials(row);
      return c.provider === 'twilio' ? c.auth_token : null;
    },
    telnyxPublicKey(row) {
      const c = numbers.openCredentials(row);
      return c.provider === 'telnyx' && typeof c.public_key === 'string' && c.public_key !== '' ? c.public_key : null;
    },
  };
}
