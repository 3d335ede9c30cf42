// The call gauges on /metrics: calls holding a slot, calls waiting for one, and the
// live call actors by the top-level state of their machine, and the media events
// (stream start and stop, keypad digits) delivered to call actors.
import type { Metrics } from '../metrics.ts';
import type { Concurrency } from './concurrency.ts';

interface GaugeSource {
  concurrency: Concurrency;
  liveActors(): { getSnapshot(): { value: unknown } }[];
  mediaEvents(): { dtmf: number; started: number; stopped: number };
}

const STATES = ['queued', 'dialing', 'initiated', 'ringing', 'in-progress', 'hanging-up', 'post-call'] as const;

const topState = (value: unknown): string => (typeof value === 'string' ? value : Object.keys(value as object)[0] ?? '');

export function registerCallGauges(metrics: Metrics, source: GaugeSource): void {
  metrics.gauge('switchboard_live_calls', 'Calls holding a concurrency slot (dialing or on the line).', () => source.concurrency.totals().held);
  metrics.gauge('switchboard_queued_calls', 'Outbound calls waiting for a concurrency slot.', () => source.concurrency.totals().queued);
  metrics.gauge('switchboard_call_actors', 'Live call actors.', () => source.liveActors().length);
  metrics.gauge('switchboard_call_media_started_total', 'Media streams that reached their call actor.', () => source.mediaEvents().started);
  metrics.gauge('switchboard_call_media_stopped_total', 'Media stream ends that reached their call actor.', () => source.mediaEvents().stopped);
  metrics.gauge('switchboard_call_dtmf_total', 'Keypad digits that reached their call actor.', () => source.mediaEvents().dtmf);
  for (const state of STATES) {
    const name = `switchboard_call_actors_${state.replace(/-/g, '_')}`;
    metrics.gauge(name, `Live call actors in state ${state}.`, () => source.liveActors().filter((a) => topState(a.getSnapshot().value) === state).length);
  }
}
