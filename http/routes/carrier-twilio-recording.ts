// Carrier A's recording status callback (recording_source `provider`,
// actors/recordings/provider-recordings.ts): `cid` names our call, and the request is verified with
// `X-Twilio-Signature` keyed with the auth token of the call's number, like every other
// carrier A endpoint (403 invalid_signature otherwise, nothing written). `completed`
// commits the fetch of the file (`RecordingUrl` + `.mp3`, a `recording.fetch` delivery
// made by the outbox) when the call asked the carrier to record and the link is on
// TWILIO_API_BASE's origin (actors/outbox/recording-fetch.ts); `absent` or `failed` means no
// file will come, and call.completed stops waiting for one. The customer holds the auth
// token that signs this callback, so its RecordingUrl is never trusted further than that.
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import { defineRoute, type HandlerContext } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { verifyTwilio } from '../../voice/carriers/twilio-signature.ts';
import { TWILIO_RECORDING_PATH } from '../../actors/recordings/provider-recordings.ts';
import { acceptRecordingCallback } from '../../actors/outbox/recording-fetch.ts';

const query = z.object({ cid: z.string().min(1).meta({ description: 'Our internal call id.' }) }).loose();

const callbackSchema = z.object({
  CallSid: z.string().min(1),
  RecordingStatus: z.string().min(1),
  RecordingUrl: z.url({ protocol: /^https?$/ }).optional(),
  RecordingDuration: z.coerce.number().nonnegative().optional(),
});

export function carrierTwilioRecordingRoutes({ storage, config, clock, calls }: AppDeps) {
  return [
    defineRoute({
      method: 'POST',
      path: TWILIO_RECORDING_PATH,
      summary: 'Carrier A recording status callback',
      tag: 'Carrier webhooks',
      auth: 'none',
      rateLimit: 'carrier',
      rawBody: true,
      query,
      responses: {
        204: {
          description:
            'The recording this service started on a call (recording_source `provider`) changed status. `completed`: its MP3 is fetched into ' +
            'DATA_DIR with the account’s credentials (a `recording.fetch` delivery, retried like a webhook) and becomes the call’s `recording_url`, ' +
            'only when the call asked the carrier to record and `RecordingUrl` is on the origin of TWILIO_API_BASE (anything else is acknowledged and ignored, ' +
            'and the call stops waiting for a file); the file is kept only if it is MP3 audio; ' +
            '`absent` or `failed`: the call has no recording. A repeated callback changes nothing.',
        },
      },
      errors: ['invalid_signature', 'invalid_request'],
      handler: (raw) => {
        const ctx = raw as HandlerContext<unknown, unknown>;
        const form = new URLSearchParams(ctx.body instanceof Buffer ? ctx.body.toString('utf8') : '');
        const cid = ctx.searchParams.get('cid') ?? '';
        const row = storage.calls.getByInternalId(cid);
        const number = row?.phone_number ? storage.numbers.get(row.account_id, row.phone_number) : undefined;
        const token = number && number.provider === 'twilio' ? calls.voices.twilioAuthToken(number) : null;
        const url = `${config.publicBaseUrl}${ctx.path}?${ctx.searchParams.toString()}`;
        if (!row || token === null || !verifyTwilio(token, url, form, ctx.headers['x-twilio-signature'])) throw new ApiError('invalid_signature');

        const parsed = callbackSchema.safeParse(Object.fromEntries(form));
        if (!parsed.success || parsed.data.CallSid !== row.carrier_call_id) {
          throw new ApiError('invalid_request', 'A recording status callback needs CallSid (the call’s own), RecordingStatus and, when completed, RecordingUrl.');
        }
        const cb = parsed.data;
        if (cb.RecordingStatus === 'completed' && cb.RecordingUrl) {
          acceptRecordingCallback(storage, {
            accountId: row.account_id,
            internalId: cid,
            url: `${cb.RecordingUrl}.mp3`,
            job: { provider: 'twilio', duration_seconds: cb.RecordingDuration ?? null },
            now: clock(),
            sources: { twilioApiBase: config.twilioApiBase, allowPrivate: config.allowPrivateNetworkTargets },
          });
        } else if (cb.RecordingStatus === 'absent' || cb.RecordingStatus === 'failed') {
          storage.recordings.giveUp(row.account_id, cid);
          storage.analysis.wake(cid, clock());
        }
        return { status: 204, body: '' };
      },
    }),
  ];
}
