// The CRM's contacts and notes over its REST API (the HighLevel v2 shape, at
// CRM_BASE_URL), for the post-call CRM sync that the webhook outbox delivers
// (actors/outbox/crm-delivery.ts): upsert a contact by phone, list a contact's notes, add one.
// Unlike the calendar client of the booking tools (crm-calendar.ts), it hands back the
// CRM's raw status and Retry-After, because the outbox's retry schedule decides what an
// answer leads to. Redirects are not followed (a 3xx is just the answer, as for every
// outbox delivery). CRM_BASE_URL is the operator's configuration, not a customer URL,
// so plain http is allowed (the simulator on loopback) and no address check applies.
// Nothing here is logged: the token and the caller's details go only on the wire.

/** The Version header the CRM documents for its contacts API. */
export const CRM_CONTACTS_VERSION = '2021-07-28';
/** Of a CRM answer only this much is read. */
const MAX_ANSWER_BYTES = 256 * 1024;

/** An HTTP answer of the CRM: its status, its Retry-After, and its JSON object when it sent one. */
export interface CrmAnswer {
  status: number;
  retryAfter: string | undefined;
  body: Record<string, unknown> | null;
}

export interface CrmContactsTarget {
  /** CRM_BASE_URL. */
  baseUrl: string;
  /** The number's private integration token. */
  token: string;
  signal: AbortSignal;
}

export interface CrmNote {
  id: string;
  body: string;
}

export const isSuccess = (a: CrmAnswer): boolean => a.status >= 200 && a.status < 300;

/** One request; rejects only when there was no answer (network, deadline, abort). */
async function crmRequest(t: CrmContactsTarget, method: 'GET' | 'POST', path: string, body?: unknown): Promise<CrmAnswer> {
  const res = await fetch(`${t.baseUrl.replace(/\/+$/, '')}${path}`, {
    method,
    redirect: 'manual',
    headers: {
      authorization: `Bearer ${t.token}`,
      version: CRM_CONTACTS_VERSION,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: t.signal,
  });
  const text = await readCapped(res);
  let parsed: Record<string, unknown> | null = null;
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) parsed = v as Record<string, unknown>;
  } catch {
    // Not JSON: the status alone speaks.
  }
  return { status: res.status, retryAfter: res.headers.get('retry-after') ?? undefined, body: parsed };
}

async function readCapped(res: Response): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A caller as a CRM contact: the location, the phone it is known by, and what else is known. */
export interface ContactFields {
  locationId: string;
  phone: string;
  name?: string | undefined;
  email?: string | undefined;
}

/** The one contact upsert of the CRM, `POST /contacts/upsert`, as both CRM clients send it (idempotent by phone). */
export const CONTACT_UPSERT_PATH = '/contacts/upsert';

export const contactUpsertBody = (c: ContactFields): Record<string, unknown> => ({
  locationId: c.locationId,
  phone: c.phone,
  ...(c.name ? { name: c.name } : {}),
  ...(c.email ? { email: c.email } : {}),
});

/** The contact id an upsert answered with (`{contact:{id}}`), or null when it named none. */
export function upsertedContactId(body: Record<string, unknown> | null): string | null {
  const id = (body?.['contact'] as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' && id !== '' ? id : null;
}

/**
 * The contact with this phone in the location, created or updated. `contactId` is set
 * on a 2xx that names it.
 */
export async function upsertContact(t: CrmContactsTarget, c: ContactFields): Promise<CrmAnswer & { contactId: string | null }> {
  const answer = await crmRequest(t, 'POST', CONTACT_UPSERT_PATH, contactUpsertBody(c));
  return { ...answer, contactId: isSuccess(answer) ? upsertedContactId(answer.body) : null };
}

/** `GET /contacts/{contactId}/notes`: the contact's notes (on a 2xx). */
export async function listNotes(t: CrmContactsTarget, contactId: string): Promise<CrmAnswer & { notes: CrmNote[] }> {
  const answer = await crmRequest(t, 'GET', `/contacts/${encodeURIComponent(contactId)}/notes`);
  const raw = answer.body?.['notes'];
  const notes: CrmNote[] = [];
  if (Array.isArray(raw)) {
    for (const n of raw) {
      const { id, body } = (n ?? {}) as { id?: unknown; body?: unknown };
      if (typeof id === 'string' && typeof body === 'string') notes.push({ id, body });
    }
  }
  return { ...answer, notes };
}

/** `POST /contacts/{contactId}/notes` with `{body}`. */
export function addNote(t: CrmContactsTarget, contactId: string, body: string): Promise<CrmAnswer> {
  return crmRequest(t, 'POST', `/contacts/${encodeURIComponent(contactId)}/notes`, { body });
}
