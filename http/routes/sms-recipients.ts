// An SMS campaign's recipients, judged before anything is stored: each phone E.164 and a
// real number of its country (libphonenumber-js, as batch campaigns: batch-recipients.ts),
// else the request is refused with `invalid_phone_format` naming the row (`Row <n>:`,
// counting from 1). A number repeated in the list is texted once (its first row). Each
// filled-in template must fit one SMS body.
import { ApiError } from '../errors.ts';
import { checkRecipients } from './batch-recipients.ts';
import { SMS_LIMITS, type SmsRecipientInput } from './sms-schema.ts';
import { renderTemplate } from '../../actors/sms/message-template.ts';
import type { SmsRecipient } from '../../storage/sms-campaigns.ts';

export function smsRecipients(rows: readonly SmsRecipientInput[], template: string): SmsRecipient[] {
  const check = checkRecipients(rows);
  check.invalid.forEach((bad, i) => {
    if (bad.reason === 'duplicate') return;
    throw new ApiError('invalid_phone_format', check.messages[i], { field: `recipients.${bad.row_index}.phone`, row_index: bad.row_index });
  });
  const out = check.valid.map((r) => ({ rowIndex: r.rowIndex, phone: r.phone, variables: rows[r.rowIndex]?.variables ?? null }));
  checkTemplateFits(out, template);
  return out.map(({ phone, variables }) => ({ phone, variables }));
}

/** Every recipient's filled-in text fits one SMS body, else `message_too_long` naming the first row that does not. */
export function checkTemplateFits(recipients: readonly (SmsRecipient & { rowIndex?: number })[], template: string): void {
  recipients.forEach((r, i) => {
    const length = renderTemplate(template, r.variables).length;
    if (length <= SMS_LIMITS.body) return;
    const row = r.rowIndex ?? i;
    throw new ApiError('message_too_long', `Row ${row + 1}: the message filled in with this recipient's variables is ${length} characters; at most ${SMS_LIMITS.body}.`, {
      field: `recipients.${row}.variables`,
      row_index: row,
    });
  });
}
