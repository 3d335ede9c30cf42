// Phone numbers imported from either carrier: import (which checks the credentials
// with the carrier and points the number at this service), list, get, per-number
// settings, delete. Another account's number is indistinguishable from a missing one.
import { z } from 'zod';
import { ApiError, referenceError } from '../errors.ts';
import { created, defineRoute, ok } from '../route.ts';
import { E164, page } from '../schemas.ts';
import type { AppDeps } from '../deps.ts';
import { findVoice } from '../../voice/voices.ts';
import { credentialsFrom, importNumber, type ImportDeps } from '../../voice/carriers/number-import.ts';
import { randomBase62 } from '../../storage/ids.ts';
import { MAX_UNPAGINATED, settingsOf, type CarrierCredentials, type ImportHolder, type NumberSettings } from '../../storage/phone-numbers.ts';
import { numberImportApiError } from './number-import-errors.ts';
import {
  READ_ONLY_FIELDS,
  SPEAKING_RATE_MAX,
  SPEAKING_RATE_MIN,
  importBody,
  listItemView,
  listQuery,
  listResponse,
  numberView,
  numberWrapper,
  patchBody,
  patchFieldCodes,
  type PatchBody,
} from './phone-number-schema.ts';

/** An agent named in a body that is missing or foreign: agent_not_found, answered 400. */
const agentReference = (agentId: string): ApiError =>
  referenceError('agent_not_found', 'agent_id', `No agent ${JSON.stringify(agentId)} on your account; agent_id must name one of your agents.`);

function conflictError(holder: ImportHolder, phoneNumber: string): ApiError {
  if (holder.kind === 'other_account') {
    // Nothing about the other account leaks: not who, not which agent.
    return new ApiError('number_already_imported', 'This phone number is already imported elsewhere; a number can be imported only once.');
  }
  if (holder.kind === 'other_agent' && holder.agentId !== null) {
    return new ApiError(
      'number_already_imported',
      `${phoneNumber} is already imported on agent ${holder.agentId} of your account. Move it with PATCH /v1/phone-numbers/{phone_number} and a new agent_id, or delete it and import again.`,
      { field: 'phone_number', agent_id: holder.agentId },
    );
  }
  return new ApiError(
    'number_already_imported',
    `${phoneNumber} is already imported on your account without an agent. Attach it with PATCH /v1/phone-numbers/{phone_number} and an agent_id.`,
    { field: 'phone_number', agent_id: null },
  );
}

const TEXT_FIELDS = ['custom_prompt', 'sms_prompt', 'web_prompt', 'voicemail_message'] as const;
const FLAG_FIELDS = ['inbound_enabled', 'outbound_enabled', 'sms_reply_enabled'] as const;
const NULLABLE_FLAG_FIELDS = ['dtmf_enabled', 'record_call', 'voicemail_leave_enabled', 'require_booking_confirmation'] as const;
const SETTABLE = Object.keys(patchBody.shape);

export function phoneNumberRoutes({ storage, clock, config }: AppDeps) {
  const numbers = storage.numbers;
  const importDeps: ImportDeps = {
    numbers,
    endpoints: { twilioApiBase: config.twilioApiBase, telnyxApiBase: config.telnyxApiBase, publicBaseUrl: config.publicBaseUrl },
    clock,
    newEventsToken: () => randomBase62(32),
  };

  // Imports of one number run one after another, so two concurrent imports cannot leave
  // the carrier pointing at one events token and the database holding the other.
  const importing = new Map<string, Promise<unknown>>();
  function oneAtATime<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = importing.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    importing.set(key, tail);
    void tail.then(() => {
      if (importing.get(key) === tail) importing.delete(key);
    });
    return run;
  }

  function applyPatch(accountId: string, current: NumberSettings, body: PatchBody): NumberSettings {
    const next = { ...current };
    if (body.agent_id !== undefined) {
      if (body.agent_id !== null && !numbers.ownsAgent(accountId, body.agent_id)) throw agentReference(body.agent_id);
      next.agent_id = body.agent_id;
    }
    for (const f of FLAG_FIELDS) if (body[f] !== undefined) next[f] = body[f];
    for (const f of NULLABLE_FLAG_FIELDS) if (body[f] !== undefined) next[f] = body[f];
    for (const f of TEXT_FIELDS) if (body[f] !== undefined) next[f] = body[f] === '' ? null : body[f];
    if (body.voice_id !== undefined) {
      const voice = body.voice_id === '' ? null : body.voice_id;
      if (voice !== null && !findVoice(voice)) {
        throw new ApiError('invalid_voice_id', `voice_id ${JSON.stringify(voice)} is not a supported voice; GET /v1/voices lists them (names are case-sensitive).`, {
          field: 'voice_id',
        });
      }
      next.voice_id = voice;
    }
    if (body.speaking_rate !== undefined) {
      next.speaking_rate = body.speaking_rate === null ? null : Math.min(SPEAKING_RATE_MAX, Math.max(SPEAKING_RATE_MIN, body.speaking_rate));
    }
    if (next.voicemail_leave_enabled === true && next.voicemail_message === null) {
      throw new ApiError('voicemail_message_required', 'voicemail_leave_enabled true needs a voicemail_message to speak; send both, or set voicemail_leave_enabled to false or null.', {
        field: 'voicemail_message',
      });
    }
    return next;
  }

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/phone-numbers',
      summary: 'Import a phone number from carrier A (twilio) or carrier B (telnyx)',
      tag: 'Phone numbers',
      async: true,
      body: importBody,
      responses: {
        201: {
          description:
            'Imported: the carrier accepted the credentials, its account owns the number, and the number’s voice and SMS webhooks now point at this service ' +
            '(carrier A: voice, SMS and status URLs; carrier B: the Call Control application’s event URL with a per-number token, the number moved onto that application, ' +
            'and its messaging profile’s webhook when it has one). Checks run in this order: body shape and missing fields, invalid_phone_format, ' +
            'agent_not_found (answered 400 here: the agent is named in the body), credential format, number_already_imported (before the carrier is asked), then the carrier. ' +
            'Every credential of the provider is required, carrier B’s telnyx_public_key included (missing, null or empty: carrier_invalid_credentials naming the field). ' +
            'Credentials are stored encrypted and never returned. If a later carrier step fails, earlier carrier changes stay and nothing is stored.',
          schema: numberWrapper,
        },
        200: {
          description:
            'Re-imported onto the same agent: the credentials and carrier ids are replaced and the webhooks re-pointed; settings are kept, and inbound_enabled/outbound_enabled change only when sent. ' +
            'This is the only way to change credentials (PATCH takes none); a re-import needs every credential, so carrier B’s public key can be replaced, not removed.',
          schema: numberWrapper,
        },
      },
      errors: [
        'missing_field',
        'invalid_request',
        'invalid_phone_format',
        'carrier_invalid_credentials',
        'invalid_carrier_sid',
        'number_already_imported',
        'carrier_auth_failed',
        'number_not_in_carrier',
        'carrier_unreachable',
      ],
      referenceErrors: ['agent_not_found'],
      handler: ({ auth, body }) => {
        const accountId = auth!.accountId;
        const phoneNumber = body.phone_number;
        if (!E164.test(phoneNumber)) {
          throw new ApiError('invalid_phone_format', 'phone_number must be E.164: a leading + and the country code, e.g. +14155550123.', { field: 'phone_number' });
        }
        if (!numbers.ownsAgent(accountId, body.agent_id)) throw agentReference(body.agent_id);
        let credentials: CarrierCredentials;
        try {
          credentials = credentialsFrom(body.provider, body);
        } catch (err) {
          throw numberImportApiError(err);
        }
        return oneAtATime(phoneNumber, async () => {
          const result = await importNumber(importDeps, {
            accountId,
            phoneNumber,
            agentId: body.agent_id,
            credentials,
            source: 'api',
            inboundEnabled: body.inbound_enabled,
            outboundEnabled: body.outbound_enabled,
          }).catch((err: unknown) => {
            throw numberImportApiError(err);
          });
          if (result.kind === 'agent_gone') throw agentReference(body.agent_id);
          if (result.kind === 'conflict') throw conflictError(result.holder, phoneNumber);
          const out = { phone_number: numberView(result.row) };
          return result.kind === 'created' ? created(out) : ok(out);
        });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/phone-numbers',
      summary: 'List the account’s phone numbers, newest first',
      tag: 'Phone numbers',
      query: listQuery,
      responses: {
        200: {
          description:
            'Without limit and offset: every number up to 1000 in one response (count is the total even beyond 1000). With either one: a page like other lists ' +
            '(limit default 25, max 100), echoing limit and offset. Empty array when none.',
          schema: listResponse,
        },
      },
      errors: ['invalid_request'],
      handler: ({ auth, query }) => {
        const paginated = query.limit !== undefined || query.offset !== undefined;
        const { limit, offset } = paginated ? page(query) : { limit: MAX_UNPAGINATED, offset: 0 };
        const { rows, total } = numbers.list(auth!.accountId, { agentId: query.agent_id, limit, offset });
        const body = { phone_numbers: rows.map(listItemView), count: total };
        return ok(paginated ? { ...body, limit, offset } : body);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/phone-numbers/{phone_number}',
      summary: 'Get a phone number and its settings',
      tag: 'Phone numbers',
      responses: { 200: { description: 'The number (credentials are never returned).', schema: numberWrapper } },
      errors: ['number_not_found'],
      handler: ({ auth, params }) => {
        const row = numbers.get(auth!.accountId, params['phone_number']!);
        if (!row) throw new ApiError('number_not_found');
        return ok({ phone_number: numberView(row) });
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: '/v1/phone-numbers/{phone_number}',
      summary: 'Change a number’s settings; takes effect on the next call or text',
      tag: 'Phone numbers',
      body: patchBody,
      ignoreFields: READ_ONLY_FIELDS,
      fieldCodes: patchFieldCodes,
      responses: {
        200: {
          description:
            'The whole number object after the change. Omitted fields are untouched; null clears a nullable field, and "" clears a text field or voice_id the same way ' +
            '(it reads back null). speaking_rate is clamped to 0.5..1.5. voicemail_leave_enabled true needs a voicemail_message (voicemail_message_required). ' +
            'agent_id must be an agent of the account (agent_not_found, 400) or null to detach. Read-only fields of the number object are ignored; a body with nothing else is missing_field.',
          schema: numberWrapper,
        },
      },
      errors: [
        'missing_field',
        'invalid_request',
        'custom_prompt_too_long',
        'sms_prompt_too_long',
        'web_prompt_too_long',
        'invalid_voice_id',
        'voicemail_message_required',
        'number_not_found',
      ],
      referenceErrors: ['agent_not_found'],
      handler: ({ auth, params, body }) => {
        if (Object.keys(body).length === 0) {
          throw new ApiError('missing_field', `Send at least one field to change: ${SETTABLE.join(', ')}.`);
        }
        const accountId = auth!.accountId;
        const phoneNumber = params['phone_number']!;
        const row = numbers.get(accountId, phoneNumber);
        if (!row) throw new ApiError('number_not_found');
        const saved = numbers.saveSettings(accountId, phoneNumber, applyPatch(accountId, settingsOf(row), body), clock());
        return ok({ phone_number: numberView(saved!) });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/phone-numbers/{phone_number}',
      summary: 'Remove a number from the account, with its caller records, integrations and custom functions',
      tag: 'Phone numbers',
      responses: {
        200: {
          description: 'Gone from this service. The carrier-side webhook settings are left as they are; calls that still arrive for the number are refused.',
          schema: z.object({ phone_number: z.string(), deleted: z.literal(true) }),
        },
      },
      errors: ['number_not_found'],
      handler: ({ auth, params }) => {
        const phoneNumber = params['phone_number']!;
        if (!numbers.delete(auth!.accountId, phoneNumber)) throw new ApiError('number_not_found');
        return ok({ phone_number: phoneNumber, deleted: true });
      },
    }),
  ];
}
