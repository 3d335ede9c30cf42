// Prometheus metrics kept in memory: requests by route and status, a latency
// histogram per route, and gauges that other parts register (live calls, actors,
// webhook backlog). Rendered in the text exposition format on GET /metrics. It sits at
// the root, beside config.ts, and imports nothing of the project, so that every layer
// but the pure machines/ may import it (test/architecture.test.ts).

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/**
 * Turn latencies: from a few ms (the engine's part) to seconds (a whole turn). Fine
 * below 50 ms, where the engine's own share is budgeted (p95 <= 20 ms), so the bench
 * (bench/conversation.ts) can interpolate its p50/p95/p99 from the buckets as
 * Prometheus' histogram_quantile does.
 */
const TURN_BUCKETS = [0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.0175, 0.02, 0.025, 0.03, 0.04, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];

interface Histogram {
  counts: number[];
  sum: number;
  count: number;
}

const escapeLabel = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export class Metrics {
  private readonly requests = new Map<string, number>();
  private readonly latency = new Map<string, Histogram>();
  private readonly gauges = new Map<string, { help: string; read: () => number }>();
  private readonly turns = new Map<string, Histogram>();
  private readonly counters = new Map<string, { help: string; values: Map<string, number> }>();

  /**
   * One conversation turn's latency, in seconds, split into its parts: `total` (the
   * caller's end of speech to the reply's first audio frame sent), `stt`, `wait`
   * (response_eagerness), `llm` (first token), `tts` (first audio) and `engine` (the rest).
   */
  observeTurn(parts: Record<string, number>): void {
    for (const [part, seconds] of Object.entries(parts)) {
      let h = this.turns.get(part);
      if (!h) {
        h = { counts: new Array<number>(TURN_BUCKETS.length).fill(0), sum: 0, count: 0 };
        this.turns.set(part, h);
      }
      for (let i = 0; i < TURN_BUCKETS.length; i++) if (seconds <= TURN_BUCKETS[i]!) h.counts[i]!++;
      h.sum += seconds;
      h.count++;
    }
  }

  /** Adds 1 to a labelled counter, e.g. provider errors by provider and kind. */
  count(name: string, help: string, label: string, value: string): void {
    let c = this.counters.get(name);
    if (!c) {
      c = { help, values: new Map() };
      this.counters.set(name, c);
    }
    const key = `${label}="${escapeLabel(value)}"`;
    c.values.set(key, (c.values.get(key) ?? 0) + 1);
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const key = `${method}\u0000${route}\u0000${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    const hkey = `${method}\u0000${route}`;
    let h = this.latency.get(hkey);
    if (!h) {
      h = { counts: new Array<number>(BUCKETS.length).fill(0), sum: 0, count: 0 };
      this.latency.set(hkey, h);
    }
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) h.counts[i]!++;
    h.sum += seconds;
    h.count++;
  }

  /** A gauge read at scrape time, e.g. `switchboard_live_calls`. */
  gauge(name: string, help: string, read: () => number): void {
    this.gauges.set(name, { help, read });
  }

  render(): string {
    const out: string[] = [];
    out.push('# HELP switchboard_http_requests_total HTTP requests by method, route pattern and status.');
    out.push('# TYPE switchboard_http_requests_total counter');
    for (const [key, n] of this.requests) {
      const [method, route, status] = key.split('\u0000');
      out.push(`switchboard_http_requests_total{method="${method}",route="${escapeLabel(route!)}",status="${status}"} ${n}`);
    }
    out.push('# HELP switchboard_http_request_duration_seconds Time from request received to response written.');
    out.push('# TYPE switchboard_http_request_duration_seconds histogram');
    for (const [key, h] of this.latency) {
      const [method, route] = key.split('\u0000');
      const labels = `method="${method}",route="${escapeLabel(route!)}"`;
      BUCKETS.forEach((b, i) => out.push(`switchboard_http_request_duration_seconds_bucket{${labels},le="${b}"} ${h.counts[i]}`));
      out.push(`switchboard_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${h.count}`);
      out.push(`switchboard_http_request_duration_seconds_sum{${labels}} ${h.sum}`);
      out.push(`switchboard_http_request_duration_seconds_count{${labels}} ${h.count}`);
    }
    out.push('# HELP switchboard_turn_latency_seconds Conversation turn latency by part: total (caller stops speaking to first agent audio sent), stt, wait, llm, tts, engine.');
    out.push('# TYPE switchboard_turn_latency_seconds histogram');
    for (const [part, h] of this.turns) {
      const labels = `part="${escapeLabel(part)}"`;
      TURN_BUCKETS.forEach((b, i) => out.push(`switchboard_turn_latency_seconds_bucket{${labels},le="${b}"} ${h.counts[i]}`));
      out.push(`switchboard_turn_latency_seconds_bucket{${labels},le="+Inf"} ${h.count}`);
      out.push(`switchboard_turn_latency_seconds_sum{${labels}} ${h.sum}`);
      out.push(`switchboard_turn_latency_seconds_count{${labels}} ${h.count}`);
    }
    for (const [name, c] of this.counters) {
      out.push(`# HELP ${name} ${c.help}`, `# TYPE ${name} counter`);
      for (const [labels, n] of c.values) out.push(`${name}{${labels}} ${n}`);
    }
    for (const [name, g] of this.gauges) {
      out.push(`# HELP ${name} ${g.help}`, `# TYPE ${name} gauge`, `${name} ${g.read()}`);
    }
    return out.join('\n') + '\n';
  }
}
