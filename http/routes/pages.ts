// The two browser pages beside /debug: the playground (`GET /playground`: talk to an agent
// through a web call) and the dashboard (`GET /dashboard`: agents, numbers, calls, webhook
// deliveries, campaigns). Each is one static HTML document with its script and style as
// separate same-origin files from http/pages/ (`GET /pages/{file}`), read once at start;
// no build step. The API key is pasted into the page and kept in the tab's sessionStorage;
// it travels only in the Authorization header of the page's fetches and in the live view
// websocket's subprotocol, never in a URL. Every value is set with textContent. The
// Content Security Policy admits only this origin's files: scripts (and the playground's
// AudioWorklet, which loads as a script), styles, fetches and websockets of this host
// ('self' covers ws:/wss: of the same host), and for the dashboard, recordings as media.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../errors.ts';
import { defineRoute, type HandlerResult } from '../route.ts';

const DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'pages');

const TYPES: Record<string, string> = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };
/** The assets a page loads, by name: nothing else under http/pages/ is served. */
const ASSETS = ['pages.css', 'session-key.js', 'playground.js', 'playground-worklet.js', 'dashboard.js'] as const;

const read = (name: string): string => readFileSync(join(DIR, name), 'utf8');

function csp(extra: string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    ...extra,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const COMMON_HEADERS: Record<string, string> = {
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
};

export const PLAYGROUND_HEADERS: Record<string, string> = {
  ...COMMON_HEADERS,
  'Content-Security-Policy': csp([]),
  'Permissions-Policy': 'microphone=(self), camera=(), geolocation=()',
};

export const DASHBOARD_HEADERS: Record<string, string> = {
  ...COMMON_HEADERS,
  // Recordings play from this service's own /recordings/ links.
  'Content-Security-Policy': csp(["media-src 'self'"]),
  'Permissions-Policy': 'microphone=(), camera=(), geolocation=()',
};

export function pageRoutes() {
  const playground = read('playground.html');
  const dashboard = read('dashboard.html');
  const assets = new Map<string, HandlerResult>(
    ASSETS.map((name) => [
      name,
      {
        status: 200,
        body: read(name),
        contentType: TYPES[name.slice(name.lastIndexOf('.') + 1)]!,
        headers: { 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' },
      },
    ]),
  );
  return [
    defineRoute({
      method: 'GET',
      path: '/playground',
      summary: 'The playground page: talk to an agent from the browser',
      tag: 'Pages',
      auth: 'none',
      responses: {
        200: {
          description:
            'An HTML page that asks for an API key (kept in the tab’s sessionStorage), lists the agents, places a web call (POST /v1/web-calls) and runs it through the microphone and an AudioWorklet, with live captions of both sides.',
        },
      },
      errors: [],
      handler: () => ({ status: 200, body: playground, contentType: TYPES['html'], headers: PLAYGROUND_HEADERS }),
    }),
    defineRoute({
      method: 'GET',
      path: '/dashboard',
      summary: 'The dashboard page',
      tag: 'Pages',
      auth: 'none',
      responses: {
        200: {
          description:
            'An HTML page that asks for an API key (kept in the tab’s sessionStorage) and shows the account’s agents, numbers, calls (transcript, analysis, bookings, latency, recording), webhook deliveries with the Test button, and campaigns with live progress from the live machine view’s websocket.',
        },
      },
      errors: [],
      handler: () => ({ status: 200, body: dashboard, contentType: TYPES['html'], headers: DASHBOARD_HEADERS }),
    }),
    defineRoute({
      method: 'GET',
      path: '/pages/{file}',
      summary: 'A script or style of the playground and dashboard pages',
      tag: 'Pages',
      auth: 'none',
      responses: { 200: { description: 'The file (JavaScript or CSS).' } },
      errors: ['route_not_found'],
      handler: ({ params }) => {
        const asset = assets.get(params['file'] ?? '');
        if (!asset) throw new ApiError('route_not_found');
        return asset;
      },
    }),
  ];
}
