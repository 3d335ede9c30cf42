// The media benchmark's server process: the real service with MEDIA_ENGINE=echo,
// whose media sockets accept any unused `bench-…` token. That bypasses call setup
// (no carrier webhook, no actor, no database row per call): what is measured is the
// media path alone — websocket, codec, session, engine and back. `/bench/echo` is a
// bare uWS echo socket on the same server, the floor to compare against.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../config.ts';
import { startSwitchboard } from '../server.ts';
import type { MediaBindings } from '../voice/media/bindings.ts';

const ownDir = process.env['DATA_DIR'] === undefined;
const dataDir = process.env['DATA_DIR'] ?? mkdtempSync(join(tmpdir(), 'switchboard-bench-media-'));
const config = loadConfig({
  ...process.env,
  PORT: '0',
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  MEDIA_ENGINE: 'echo',
});

const used = new Set<string>();
let calls = 0;
const benchBindings: MediaBindings = {
  claim(_provider, token) {
    if (!token.startsWith('bench-') || used.has(token)) return null;
    used.add(token);
    calls++;
    return { callId: `call_bench${calls}`, accountId: 'acct_bench', direction: 'inbound', agentId: null, deliver() {} };
  },
};

const sb = await startSwitchboard(config, {
  mediaBindings: benchBindings,
  // The floor to compare with: a websocket that sends every message straight back,
  // with no codec, session or engine.
  configure: (app) => {
    app.ws('/bench/echo', {
      message: (ws, message, isBinary) => {
        ws.send(message, isBinary);
      },
    });
  },
});
// The parent reads the port from this message and the CPU time from /proc/<pid>/stat.
process.send?.({ port: sb.port });
process.on('message', (m) => {
  if (m === 'stop') {
    void sb.stop().then(() => {
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  }
});
