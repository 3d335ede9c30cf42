// Prometheus metrics kept in memory: requests by route and status, a latency
// histogram per route, and gauges that other parts register (live calls, actors,
// webhook backlog). Rendered in the text exposition format on GET /metrics. It sits at
// the root, beside config.ts, and imports nothing of the project, so that every layer
// but the pure machines/ may import it (test/architecture.test.ts).

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

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
    for (const [name, g] of this.gauges) {
      out.push(`# HELP ${name} ${g.help}`, `# TYPE ${name} gauge`, `${name} ${g.read()}`);
    }
    return out.join('\n') + '\n';
  }
}
