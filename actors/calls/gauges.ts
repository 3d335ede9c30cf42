// The call gauges on /metrics: calls holding a slot, calls waiting for one, and the
// live call actors by the top-level state of their machine, and the media events
// (stream start and stop, keypad digits) delivered to call actors.
import type { Metrics } from '../../metrics.ts';
import type { Concurrency } from '../runtime/concurrency.ts';
import { CALL_PHASES, phaseOf } from '../../machines/call.ts';

interface GaugeSource {
  concurrency: Concurrency;
  liveActors(): { getSnapshot(): { value: unknown } }[];
  mediaEvents(): { dtmf: number; started: number; stopped: number };
}


export function registerCallGauges(metrics: Metrics, source: GaugeSource): void {
  metrics.gauge('switchboard_live_calls', 'Calls holding a concurrency slot (dialing or on the line).', () => source.concurrency.totals().held);
  metrics.gauge('switchboard_queued_calls', 'Outbound calls waiting for a concurrency slot.', () => source.concurrency.totals().queued);
  metrics.gauge('switchboard_call_actors', 'Live call actors.', () => source.liveActors().length);
  metrics.gauge('switchboard_call_media_started_total', 'Media streams that reached their call actor.', () => source.mediaEvents().started);
  metrics.gauge('switchboard_call_media_stopped_total', 'Media stream ends that reached their call actor.', () => source.mediaEvents().stopped);
  metrics.gauge('switchboard_call_dtmf_total', 'Keypad digits that reached their call actor.', () => source.mediaEvents().dtmf);
  for (const state of CALL_PHASES) {
    const name = `switchboard_call_actors_${state.replace(/-/g, '_')}`;
    metrics.gauge(name, `Live call actors in state ${state}.`, () => source.liveActors().filter((a) => phaseOf(a.getSnapshot().value) === state).length);
  }
}
