// How a media websocket finds its call: the one-time token the service gave the
// carrier for this call (carrier A stream <Parameter name="token">, carrier B stream
// URL `?token=`) is claimed once, and the claim says which call the stream belongs
// to and where its coarse events go. The supervisor implements `claim`.
import type { CallEvent } from '../../machines/call-events.ts';

export type MediaProvider = 'twilio' | 'telnyx';

/** The call a media stream belongs to, as the stream needs to know it. */
export interface MediaBinding {
  /** Internal id `call_…` (the actor id). */
  callId: string;
  accountId: string;
  direction: 'inbound' | 'outbound';
  agentId: string | null;
  /** Hands `MEDIA.STARTED`, `DTMF` and `MEDIA.STOPPED` to the call actor; never throws. */
  deliver(event: CallEvent): void;
}

export interface MediaBindings {
  /**
   * The call expecting a stream with this token, or null when the token is unknown,
   * already used, or belongs to another carrier. One-time: once a claim has
   * returned a binding, every later claim of the same token returns null.
   */
  claim(provider: MediaProvider, token: string, at: number): MediaBinding | null;
  /**
   * Whether a live call still expects a stream with this token, without claiming it
   * (the token stays claimable). Carrier B's stream URL carries its token, so the
   * websocket upgrade is refused when this says no; without it the check waits for `start`.
   */
  expects?(provider: MediaProvider, token: string): boolean;
}
