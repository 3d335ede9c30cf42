// The transfer client of one imported number (voice/carriers/call-transfer.ts), built from
// its decrypted credentials for the step at hand and never kept, like carrier-voices.ts.
import type { Config } from '../../config.ts';
import type { PhoneNumberRow, PhoneNumbersRepo } from '../../storage/phone-numbers.ts';
import type { CarrierTransfer } from '../../voice/carriers/call-transfer.ts';
import { createTelnyxTransfer } from '../../voice/carriers/telnyx-transfer.ts';
import { createTwilioTransfer } from '../../voice/carriers/twilio-transfer.ts';

export function createCarrierTransfers(numbers: PhoneNumbersRepo, config: Pick<Config, 'twilioApiBase' | 'telnyxApiBase'>): (row: PhoneNumberRow) => CarrierTransfer {
  return (row) => {
    const c = numbers.openCredentials(row);
    if (c.provider === 'twilio') return createTwilioTransfer({ baseUrl: config.twilioApiBase, accountSid: c.account_sid, authToken: c.auth_token });
    return createTelnyxTransfer({ baseUrl: config.telnyxApiBase, apiKey: c.api_key, connectionId: c.connection_id });
  };
}
