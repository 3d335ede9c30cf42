// The layers of architecture.md ("Layout"), enforced. Every import of every source file
// outside node_modules is read with the TypeScript parser (`import`, `import type`,
// `export … from`, `import('…')`, `import('…').T` in a type, `require('…')`), its
// relative specifier resolved to a project file, and the pair held to RULES below. A
// failure lists each offending import as `file → imported file (rule)`.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SKIPPED_DIRS = new Set(['node_modules', 'test-output', 'data']);
const SOURCE = /\.(?:[cm]?ts|tsx|[cm]?js)$/;

/**
 * Where a file sits in the architecture. `machines/*-events.ts` (the machines' event and
 * input schemas) is a unit of its own: the one part of machines/ that http/ and voice/ may
 * import. `test` is every file under test/ and every `*.test.ts`: it may import anything.
 */
type Unit =
  | 'machines'
  | 'machines/*-events.ts'
  | ActorRoom
  | 'http'
  | 'storage'
  | 'voice'
  | 'server.ts'
  | 'config.ts'
  | 'metrics.ts'
  | 'admin.ts'
  | 'vitest.config.ts'
  | 'bench'
  | 'scripts'
  | 'test';

interface Rule {
  /** Units whose files this one may import, values and types alike (its own unit included where listed). */
  may: Unit[];
  /** Units this one may import with `import type` / `export type` only: nothing of them loads at run time. */
  typesOnly?: Unit[];
  /** When set, the only external packages it may import (a trailing `/` admits a scope). */
  packages?: string[];
  /** The rule in words, printed with each violation. */
  says: string;
}

/**
 * actors/ has a room per concern (architecture.md, "Layout"), and arrows between rooms
 * run one way, down this list: a room may import the rooms after it, never one before
 * it. So the runtime every kind stands on imports no kind, no room imports the agent, and
 * a kind added later (campaigns, SMS) slots in without an arrow running back up.
 */
const ACTOR_ROOMS = [
  'actors/agent',
  'actors/campaigns',
  'actors/sms',
  'actors/calls',
  'actors/post-call',
  'actors/outbox',
  'actors/recordings',
  'actors/runtime',
] as const;
type ActorRoom = (typeof ACTOR_ROOMS)[number];
const ACTORS: Unit[] = [...ACTOR_ROOMS];

/** A room's rule: the rooms below it, and the layers every room may use. */
function actorRoomRule(room: ActorRoom): Rule {
  const below = ACTOR_ROOMS.slice(ACTOR_ROOMS.indexOf(room) + 1);
  const rooms = below.length === 0 ? 'no other room of actors/' : `only the rooms below it in actors/ (${below.map((r) => r.slice('actors/'.length)).join(', ')})`;
  return {
    may: [room, ...below, 'machines', 'machines/*-events.ts', 'storage', 'voice', 'config.ts', 'metrics.ts'],
    says: `${room}/ may import ${rooms}, and machines, storage, voice, config.ts and metrics.ts (arrows in actors/ run ${ACTOR_ROOMS.map((r) => r.slice('actors/'.length)).join(' → ')})`,
  };
}

const MACHINES: Rule = {
  may: ['machines', 'machines/*-events.ts'],
  packages: ['xstate', '@xstate/', 'zod'],
  says: 'machines/ imports nothing of the project but its own files, and only xstate and zod: no I/O, no clock',
};
const ALL_BUT_HTTP: Unit[] = ['machines', 'machines/*-events.ts', ...ACTORS, 'storage', 'voice', 'server.ts', 'config.ts', 'metrics.ts', 'admin.ts'];

/**
 * The Layout table of architecture.md, plus the composition root. metrics.ts is the
 * neutral metrics registry: every layer may import it except machines/, which are pure
 * and report through actions that actors/ implement. Nothing but server.ts imports http/.
 */
const RULES: Record<Exclude<Unit, 'test'>, Rule> = {
  machines: MACHINES,
  'machines/*-events.ts': MACHINES,
  ...(Object.fromEntries(ACTOR_ROOMS.map((room) => [room, actorRoomRule(room)])) as Record<ActorRoom, Rule>),
  http: {
    may: ['http', ...ACTORS, 'storage', 'voice', 'machines/*-events.ts', 'config.ts', 'metrics.ts'],
    says: 'http/ may import actors, storage, voice, the machines’ machines/*-events.ts schemas, config.ts and metrics.ts',
  },
  storage: {
    may: ['storage', 'metrics.ts'],
    says: 'storage/ imports nothing of the project but metrics.ts',
  },
  voice: {
    may: ['voice', 'machines/*-events.ts', 'metrics.ts'],
    typesOnly: ['storage'],
    says: 'voice/ may import storage types only (import type), the machines’ machines/*-events.ts schemas and metrics.ts',
  },
  // The composition root: the process's entry points wire the layers together.
  'server.ts': {
    may: ['machines', 'machines/*-events.ts', ...ACTORS, 'http', 'storage', 'voice', 'config.ts', 'metrics.ts'],
    says: 'server.ts wires config, storage, actors and http: it imports every layer, and no entry point or test',
  },
  'config.ts': {
    may: ['machines', 'machines/*-events.ts', 'storage', 'voice'],
    says: 'config.ts may name options of machines, storage and voice, never of actors or http, which import it',
  },
  'metrics.ts': { may: [], says: 'metrics.ts imports nothing of the project: every layer imports it' },
  'admin.ts': { may: ALL_BUT_HTTP, says: 'admin.ts is an entry point: anything but http/ and tests' },
  'vitest.config.ts': { may: [], says: 'vitest.config.ts imports nothing of the project' },
  bench: { may: [...ALL_BUT_HTTP, 'bench', 'test'], says: 'bench/ may import anything but http/: it drives the API over the wire' },
  scripts: { may: [...ALL_BUT_HTTP, 'scripts'], says: 'scripts/ may import anything but http/ and tests' },
};

/** Packages that belong to one layer: nobody else talks SQL or uWebSockets.js. */
const PACKAGE_OWNERS: { pkg: string; owners: Unit[]; says: string }[] = [
  { pkg: 'better-sqlite3', owners: ['storage'], says: 'better-sqlite3 belongs to storage/: all SQL lives there' },
  { pkg: 'uWebSockets.js', owners: ['http', 'server.ts'], says: 'uWebSockets.js belongs to http/ (and server.ts, which owns the app)' },
];

const FOLDERS = new Set<string>(['machines', 'http', 'storage', 'voice', 'bench', 'scripts']);
const ROOT_FILES = new Set<string>(['server.ts', 'config.ts', 'metrics.ts', 'admin.ts', 'vitest.config.ts']);

/** The unit of a project path (posix, relative to the root); null for a place the table does not know. */
function unitOf(file: string): Unit | null {
  if (file.startsWith('test/') || /\.test\.[cm]?[jt]sx?$/.test(file)) return 'test';
  const slash = file.indexOf('/');
  if (slash < 0) return ROOT_FILES.has(file) ? (file as Unit) : null;
  const top = file.slice(0, slash);
  if (top === 'machines' && /^machines\/[^/]+-events\.ts$/.test(file)) return 'machines/*-events.ts';
  // A file of actors/ lives in one of its rooms; one directly in actors/ is in no layer.
  if (top === 'actors') return (ACTOR_ROOMS as readonly string[]).find((room) => file.startsWith(`${room}/`)) as ActorRoom | undefined ?? null;
  return FOLDERS.has(top) ? (top as Unit) : null;
}

interface Import {
  specifier: string;
  /** Erased at compile time: `import type`, `export type`, or `import('…')` in a type. */
  typeOnly: boolean;
}

/**
 * Every module a source text names. `import { type A } from '…'` is NOT type-only: under
 * `verbatimModuleSyntax` it compiles to `import {} from '…'`, which still loads the module.
 */
function importsOf(fileName: string, text: string): Import[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const out: Import[] = [];
  const add = (node: ts.Node | undefined, typeOnly: boolean) => {
    if (node && ts.isStringLiteralLike(node)) out.push({ specifier: node.text, typeOnly });
    else out.push({ specifier: `<computed: ${node ? node.getText(source) : 'nothing'}>`, typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add(node.moduleSpecifier, node.importClause?.isTypeOnly ?? false);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      add(node.moduleSpecifier, node.isTypeOnly);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression, node.isTypeOnly);
    } else if (ts.isImportTypeNode(node)) {
      const arg = node.argument;
      add(ts.isLiteralTypeNode(arg) ? arg.literal : arg, true);
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      add(node.arguments[0], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The project file a relative specifier names, or its normalized path when no such file exists. */
function resolveSpecifier(files: ReadonlyMap<string, string>, from: string, specifier: string): string {
  const path = posix.normalize(posix.join(posix.dirname(from), specifier));
  const candidates = [path, `${path}.ts`, `${path}.tsx`, `${path}/index.ts`, path.replace(/\.([cm]?)js$/, '.$1ts')];
  return candidates.find((c) => files.has(c)) ?? path;
}

const packageOf = (specifier: string): string =>
  specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

/** Every import of `files` (project path → source text) that breaks the table, as `file → imported file (rule)`. */
function violationsOf(files: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    const unit = unitOf(file);
    if (unit === 'test') continue;
    if (unit === null) {
      out.push(`${file} → * (in no layer of architecture.md: name its place in RULES in test/architecture.test.ts, and in the Layout)`);
      continue;
    }
    const rule = RULES[unit];
    for (const { specifier, typeOnly } of importsOf(file, text)) {
      if (specifier.startsWith('<computed')) {
        out.push(`${file} → ${specifier} (an import must name its module with a string literal so its layer can be checked)`);
        continue;
      }
      if (!specifier.startsWith('.') && !specifier.startsWith('/')) {
        const pkg = packageOf(specifier);
        if (rule.packages && !rule.packages.some((p) => (p.endsWith('/') ? pkg.startsWith(p) : pkg === p))) {
          out.push(`${file} → ${specifier} (${rule.says})`);
          continue;
        }
        const owned = PACKAGE_OWNERS.find((o) => o.pkg === pkg);
        if (owned && !owned.owners.includes(unit)) out.push(`${file} → ${specifier} (${owned.says})`);
        continue;
      }
      const target = resolveSpecifier(files, file, specifier);
      const targetUnit = target.startsWith('../') || specifier.startsWith('/') ? null : unitOf(target);
      if (targetUnit === null) {
        out.push(`${file} → ${target} (outside every layer of architecture.md)`);
      } else if (rule.may.includes(targetUnit)) {
        continue;
      } else if (rule.typesOnly?.includes(targetUnit)) {
        if (!typeOnly) out.push(`${file} → ${target} (${rule.says}; this import loads the module at run time: write \`import type\`)`);
      } else {
        out.push(`${file} → ${target} (${rule.says})`);
      }
    }
  }
  return out;
}

/** Every source file of the project, by its posix path from the root. */
function projectFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string, rel: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.') || SKIPPED_DIRS.has(entry.name)) continue;
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(join(dir, entry.name), path);
      else if (entry.isFile() && SOURCE.test(entry.name)) files.set(path, readFileSync(join(dir, entry.name), 'utf8'));
    }
  };
  walk(ROOT, '');
  return files;
}

describe('architecture: the layers of architecture.md', () => {
  it('reads every form of import, and knows which ones load the module', () => {
    const text = [
      "import a from './a.ts';",
      "import type { B } from './b.ts';",
      "import { type C } from './c.ts';",
      "import './d.ts';",
      "export * from './e.ts';",
      "export type { F } from './f.ts';",
      "export { type G } from './g.ts';",
      "const h = await import('./h.ts');",
      "let i: import('./i.ts').I;",
      "const j = require('./j.cjs');",
      "const k = await import(name);",
      'const l = db.import({});',
    ].join('\n');
    expect(importsOf('x.ts', text)).toEqual([
      { specifier: './a.ts', typeOnly: false },
      { specifier: './b.ts', typeOnly: true },
      { specifier: './c.ts', typeOnly: false },
      { specifier: './d.ts', typeOnly: false },
      { specifier: './e.ts', typeOnly: false },
      { specifier: './f.ts', typeOnly: true },
      { specifier: './g.ts', typeOnly: false },
      { specifier: './h.ts', typeOnly: false },
      { specifier: './i.ts', typeOnly: true },
      { specifier: './j.cjs', typeOnly: false },
      { specifier: '<computed: name>', typeOnly: false },
    ]);
  });

  it('reports each broken rule as file → imported file (rule)', () => {
    const files = new Map([
      ['storage/ids.ts', "import { z } from 'zod';"],
      ['storage/rows.ts', 'export interface Row { id: string }'],
      ['http/errors.ts', 'export class ApiError extends Error {}'],
      ['machines/call.ts', "import { setup } from 'xstate';\nimport { randomUUID } from 'node:crypto';"],
      ['machines/call-events.ts', "import { z } from 'zod';"],
      ['metrics.ts', 'export class Metrics {}'],
      ['voice/a.ts', "import type { Row } from '../storage/rows.ts';\nimport { newId } from '../storage/ids';\nimport { ApiError } from '../http/errors.ts';"],
      ['voice/b.ts', "import { callEventSchema } from '../machines/call-events.ts';\nimport type { M } from '../metrics.ts';"],
      ['http/route.ts', "import { callMachine } from '../machines/call.ts';"],
      ['actors/calls/call-system.ts', "import type { Metrics } from '../../http/metrics.ts';\nimport Database from 'better-sqlite3';\nimport { recordingOf } from '../recordings/store.ts';"],
      ['actors/x.test.ts', "import { ApiError } from '../http/errors.ts';"],
      // The rooms of actors/: arrows run agent → … → calls → post-call → outbox → recordings → runtime.
      ['actors/runtime/supervisor.ts', "import { callKind } from '../calls/call-kind.ts';"],
      ['actors/outbox/webhook-outbox.ts', "import { planJob } from '../post-call/analysis-plan.ts';\nimport { lanes } from '../runtime/lanes.ts';"],
      ['actors/calls/inbound.ts', "import type { Engine } from '../agent/agent-engine.ts';"],
      ['actors/loose.ts', ''],
      ['voice/c.ts', "import { supervise } from '../actors/runtime/supervisor.ts';"],
      ['bench/run.ts', "import { startSwitchboard } from '../server.ts';"],
      ['shared/thing.ts', ''],
    ]);
    expect(violationsOf(files)).toEqual([
      'machines/call.ts → node:crypto (machines/ imports nothing of the project but its own files, and only xstate and zod: no I/O, no clock)',
      'voice/a.ts → storage/ids.ts (voice/ may import storage types only (import type), the machines’ machines/*-events.ts schemas and metrics.ts; this import loads the module at run time: write `import type`)',
      'voice/a.ts → http/errors.ts (voice/ may import storage types only (import type), the machines’ machines/*-events.ts schemas and metrics.ts)',
      'http/route.ts → machines/call.ts (http/ may import actors, storage, voice, the machines’ machines/*-events.ts schemas, config.ts and metrics.ts)',
      `actors/calls/call-system.ts → http/metrics.ts (${actorRoomRule('actors/calls').says})`,
      'actors/calls/call-system.ts → better-sqlite3 (better-sqlite3 belongs to storage/: all SQL lives there)',
      `actors/runtime/supervisor.ts → actors/calls/call-kind.ts (${actorRoomRule('actors/runtime').says})`,
      `actors/outbox/webhook-outbox.ts → actors/post-call/analysis-plan.ts (${actorRoomRule('actors/outbox').says})`,
      `actors/calls/inbound.ts → actors/agent/agent-engine.ts (${actorRoomRule('actors/calls').says})`,
      'actors/loose.ts → * (in no layer of architecture.md: name its place in RULES in test/architecture.test.ts, and in the Layout)',
      'voice/c.ts → actors/runtime/supervisor.ts (voice/ may import storage types only (import type), the machines’ machines/*-events.ts schemas and metrics.ts)',
      'shared/thing.ts → * (in no layer of architecture.md: name its place in RULES in test/architecture.test.ts, and in the Layout)',
    ]);
  });

  it('every import of the project keeps to its layer', () => {
    const violations = violationsOf(projectFiles());
    expect(violations, `${violations.length} import(s) break the layers of architecture.md:\n  ${violations.join('\n  ')}\n`).toEqual([]);
  });
});
