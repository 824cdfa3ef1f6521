import { describe, expect, it } from 'vitest';
import type { BudgetOptions } from '../src/config/options.js';
import { BUDGET_PORT, VirtualClock } from '../src/engine/index.js';
import { createBudget } from '../src/index.js';

/** A budget's engine-facing side (deposit, acquire, release, penalize), as the engine sees it. */
const budgetPort = (options: BudgetOptions) => createBudget(options)[BUDGET_PORT];

import { ReplicaPicker, retryAfterMs } from '../src/replicas/picker.js';

const replica = (name: string, more: { hedgeOnly?: boolean; weight?: number } = {}) => ({
  origin: `http://${name}:1`,
  name,
  hedgeOnly: more.hedgeOnly ?? false,
  weight: more.weight ?? 1,
});
const origins = ['a', 'b', 'c'].map((name) => replica(name));

describe('replica picker', () => {
  it('round-robins the primary and keeps a replica held back by Retry-After out until then', async () => {
    const clock = new VirtualClock();
    const picker = new ReplicaPicker(origins, clock);
    expect([picker.primary(), picker.primary(), picker.primary()]).toEqual([0, 1, 2]);
    picker.holdBack(1, 1000);
    expect([picker.primary(), picker.primary(), picker.primary(), picker.primary()]).toEqual([
      0, 2, 0, 2,
    ]);
    expect(picker.hedge([0])).toBe(2);
    await clock.advance(1000);
    expect(picker.isHeld(1)).toBe(false);
    expect([picker.primary(), picker.primary(), picker.primary()]).toContain(1);
  });

  it('never leaves no replica: with every one held back, the one free soonest', () => {
    const picker = new ReplicaPicker(origins, new VirtualClock());
    picker.holdBack(0, 3000);
    picker.holdBack(1, 1000);
    picker.holdBack(2, 2000);
    expect(picker.primary()).toBe(1);
    expect(picker.hedge([1])).toBe(2);
  });

  it('sends hedges to the untried replica with the lowest recent latency; an outlier is last', () => {
    const picker = new ReplicaPicker(origins, new VirtualClock());
    for (let i = 0; i < 5; i++) {
      picker.begin(1);
      picker.end(1, 500);
      picker.begin(2);
      picker.end(2, 10);
    }
    expect(picker.hedge([0])).toBe(2);
    picker.begin(2);
    picker.begin(2);
    picker.begin(2);
    // Three attempts in flight on c weigh less than b's 50x latency.
    expect(picker.hedge([0])).toBe(2);
    expect(picker.hedge([0, 2])).toBe(1);
  });

  it('weighs the primary rotation, and never makes a hedge-only replica the primary', () => {
    const picker = new ReplicaPicker(
      [replica('a', { weight: 3 }), replica('b'), replica('pricey', { hedgeOnly: true })],
      new VirtualClock(),
    );
    const primaries = Array.from({ length: 8 }, () => picker.primary());
    expect(primaries.filter((i) => i === 0)).toHaveLength(6);
    expect(primaries.filter((i) => i === 1)).toHaveLength(2);
    // Smooth: the heavy replica's turns are spread, not bunched.
    expect(primaries.slice(0, 4)).toEqual([0, 0, 1, 0]);
    expect(picker.hedge([0, 1])).toBe(2);
    // Held back, the primaries fall back on the one free soonest, still never the hedge-only.
    picker.holdBack(0, 2000);
    picker.holdBack(1, 1000);
    expect(picker.primary()).toBe(1);
  });

  it('counts attempts, wins and failures per replica name', () => {
    const picker = new ReplicaPicker([replica('a'), replica('b')], new VirtualClock());
    picker.begin(0);
    picker.begin(1);
    picker.end(0, 12);
    picker.outcome(0, 'won');
    picker.end(1);
    picker.outcome(1, 'failed');
    expect(picker.stats()).toEqual({
      a: { attempts: 1, won: 1, failed: 0, inFlight: 0, latencyMs: 12, heldBack: false },
      b: { attempts: 1, won: 0, failed: 1, inFlight: 0, latencyMs: 0, heldBack: false },
    });
    expect(picker.name(1)).toBe('b');
    expect(picker.name(-1)).toBeUndefined();
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs(new Date(Date.now() + 5000).toUTCString())).toBeGreaterThan(3000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe('overload-aware budget', () => {
  it('overload signals withdraw tokens, so hedging backs off, and the withdrawals expire', async () => {
    const clock = new VirtualClock();
    const budget = budgetPort({ ratio: 0.1, minPerSecond: 0, ttlMs: 10_000, clock });
    for (let i = 0; i < 100; i++) budget.deposit();
    expect(budget.stats().tokens).toBe(10);
    for (let i = 0; i < 12; i++) budget.penalize();
    expect(budget.acquire()).toBe('denied_budget');
    expect(budget.stats().penalties).toBe(12);
    await clock.advance(10_000);
    for (let i = 0; i < 100; i++) budget.deposit();
    expect(budget.acquire()).toBe('granted');
  });
});
