// Model-based test of the concurrency slots (actors/runtime/slots-store.ts through
// actors/runtime/concurrency.ts, as the calls kind uses them): fast-check runs sequences
// of acquire, force, enqueue, release, requeue, drop and limit changes on two accounts
// against a model of lists. After every command the real slots equal the model's, the
// grants came in the model's order (first in, first out), and no call is both holding a
// slot and waiting for one; after any command that offers slots, no account leaves a
// slot free while one of its calls waits.
import fc from 'fast-check';
import pino from 'pino';
import { expect, it } from 'vitest';
import { createConcurrency, type Concurrency } from '../../actors/runtime/concurrency.ts';

const ACCOUNTS = ['acct_a', 'acct_b'] as const;
const CALLS = ['c1', 'c2', 'c3', 'c4', 'c5'] as const;

interface Model {
  limits: Map<string, number>;
  held: Map<string, string[]>;
  waiting: Map<string, string[]>;
  grants: string[];
}
interface Real {
  slots: Concurrency;
  limits: Map<string, number>;
  grants: string[];
}

const list = (m: Map<string, string[]>, a: string): string[] => m.get(a) ?? [];
/** The model's rule for offering slots: oldest waiting first, while fewer than the limit hold. */
function offer(m: Model, a: string): void {
  const held = list(m.held, a);
  const waiting = list(m.waiting, a);
  while (waiting.length > 0 && held.length < (m.limits.get(a) ?? 0)) {
    const next = waiting.shift()!;
    held.push(next);
    m.grants.push(`${a}:${next}`);
  }
  m.held.set(a, held);
  m.waiting.set(a, waiting);
}

function check(m: Model, r: Real, offered: string | null): void {
  for (const a of ACCOUNTS) {
    expect(r.slots.held(a), `held of ${a}`).toBe(list(m.held, a).length);
    expect(r.slots.queued(a), `queued of ${a}`).toBe(list(m.waiting, a).length);
    const both = list(m.held, a).filter((c) => list(m.waiting, a).includes(c));
    expect(both, 'a call both holding and waiting').toEqual([]);
  }
  // First in, first out within each account (the periodic look may offer accounts in any order).
  for (const a of ACCOUNTS) expect(r.grants.filter((g) => g.startsWith(`${a}:`))).toEqual(m.grants.filter((g) => g.startsWith(`${a}:`)));
  expect(r.grants.length).toBe(m.grants.length);
  if (offered !== null && list(m.waiting, offered).length > 0) {
    expect(list(m.held, offered).length).toBeGreaterThanOrEqual(m.limits.get(offered) ?? 0);
  }
  const totals = r.slots.totals();
  expect(totals).toEqual({
    held: ACCOUNTS.reduce((n, a) => n + list(m.held, a).length, 0),
    queued: ACCOUNTS.reduce((n, a) => n + list(m.waiting, a).length, 0),
  });
}

type Cmd = fc.Command<Model, Real>;
const account = fc.constantFrom(...ACCOUNTS);
const call = fc.constantFrom(...CALLS);

class Acquire implements Cmd {
  constructor(readonly a: string, readonly c: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    offer(m, this.a);
    const held = list(m.held, this.a);
    const free = list(m.waiting, this.a).length === 0 && held.length < (m.limits.get(this.a) ?? 0);
    const expected = held.includes(this.c) || free;
    if (free && !held.includes(this.c)) held.push(this.c);
    expect(r.slots.tryAcquire(this.a, this.c)).toBe(expected);
    check(m, r, this.a);
  }
  toString = () => `acquire(${this.a}, ${this.c})`;
}
class Force implements Cmd {
  constructor(readonly a: string, readonly c: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const held = list(m.held, this.a);
    if (!held.includes(this.c)) held.push(this.c);
    m.held.set(this.a, held);
    m.waiting.set(this.a, list(m.waiting, this.a).filter((x) => x !== this.c));
    r.slots.forceAcquire(this.a, this.c);
    check(m, r, null);
  }
  toString = () => `force(${this.a}, ${this.c})`;
}
class Enqueue implements Cmd {
  constructor(readonly a: string, readonly c: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    if (!list(m.held, this.a).includes(this.c)) {
      const waiting = list(m.waiting, this.a);
      if (!waiting.includes(this.c)) waiting.push(this.c);
      m.waiting.set(this.a, waiting);
      offer(m, this.a);
    }
    r.slots.enqueue(this.a, this.c);
    check(m, r, list(m.held, this.a).includes(this.c) ? null : this.a);
  }
  toString = () => `enqueue(${this.a}, ${this.c})`;
}
class Release implements Cmd {
  constructor(readonly a: string, readonly c: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    m.held.set(this.a, list(m.held, this.a).filter((x) => x !== this.c));
    m.waiting.set(this.a, list(m.waiting, this.a).filter((x) => x !== this.c));
    offer(m, this.a);
    r.slots.release(this.a, this.c);
    check(m, r, this.a);
  }
  toString = () => `release(${this.a}, ${this.c})`;
}
class Requeue implements Cmd {
  constructor(readonly a: string, readonly c: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    m.held.set(this.a, list(m.held, this.a).filter((x) => x !== this.c));
    m.waiting.set(this.a, [this.c, ...list(m.waiting, this.a).filter((x) => x !== this.c)]);
    r.slots.requeue(this.a, this.c);
    check(m, r, null);
  }
  toString = () => `requeue(${this.a}, ${this.c})`;
}
class Drop implements Cmd {
  constructor(readonly a: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    m.held.delete(this.a);
    m.waiting.delete(this.a);
    r.slots.dropAccount(this.a);
    check(m, r, null);
  }
  toString = () => `drop(${this.a})`;
}
class Limit implements Cmd {
  constructor(readonly a: string, readonly limit: number) {}
  check = () => true;
  run(m: Model, r: Real): void {
    m.limits.set(this.a, this.limit);
    r.limits.set(this.a, this.limit);
    // The calls kind's periodic look: every account with calls waiting is offered slots.
    for (const a of ACCOUNTS) offer(m, a);
    r.slots.pumpAll();
    check(m, r, this.a);
  }
  toString = () => `limit(${this.a}, ${this.limit})`;
}

const commands = [
  fc.tuple(account, call).map(([a, c]) => new Acquire(a, c)),
  fc.tuple(account, call).map(([a, c]) => new Force(a, c)),
  fc.tuple(account, call).map(([a, c]) => new Enqueue(a, c)),
  fc.tuple(account, call).map(([a, c]) => new Release(a, c)),
  fc.tuple(account, call).map(([a, c]) => new Requeue(a, c)),
  account.map((a) => new Drop(a)),
  fc.tuple(account, fc.integer({ min: 0, max: 3 })).map(([a, n]) => new Limit(a, n)),
];

it('the slots store keeps to the model: FIFO grants, no free slot while a call waits, never holding and waiting at once', () => {
  fc.assert(
    fc.property(fc.commands(commands, { maxCommands: 60 }), (cmds) => {
      const limits = new Map<string, number>([['acct_a', 2], ['acct_b', 1]]);
      const real: Real = { limits, grants: [], slots: null as unknown as Concurrency };
      real.slots = createConcurrency({ limitOf: (a) => limits.get(a) ?? 0, grant: (a, c) => real.grants.push(`${a}:${c}`), log: pino({ level: 'silent' }) });
      const model: Model = { limits: new Map(limits), held: new Map(), waiting: new Map(), grants: [] };
      fc.modelRun(() => ({ model, real }), cmds);
    }),
    { numRuns: 400 },
  );
});
