import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BudgetOptions } from '../src/config/options.js';
import { BUDGET_PORT, VirtualClock } from '../src/engine/index.js';
import { createBudget } from '../src/index.js';

/** A budget's engine-facing side (deposit, acquire, release, penalize), as the engine sees it. */
const budgetPort = (options: BudgetOptions) => createBudget(options)[BUDGET_PORT];

/**
 * A budget of 5% with a floor of 10/s over a 10 s ttl, on a hand-driven clock, after 10 s of
 * 1,000 calls a second and no hedge; `at(ms)` moves its clock.
 */
function tenQuietSeconds() {
  let now = 0;
  const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
  const budget = budgetPort({ ratio: 0.05, minPerSecond: 10, ttlMs: 10_000, clock });
  for (let i = 0; i < 10_000; i++) {
    now = i;
    budget.deposit();
  }
  return {
    budget,
    at(ms: number) {
      now = ms;
    },
  };
}

describe('HedgeBudget', () => {
  it('grants exactly ratio x calls hedges when there is no floor', () => {
    const clock = new VirtualClock();
    const budget = budgetPort({ ratio: 0.05, minPerSecond: 0, clock });
    for (let i = 0; i < 100; i++) budget.deposit();
    const grants = Array.from({ length: 10 }, () => budget.acquire());
    expect(grants.filter((g) => g === 'granted')).toHaveLength(5);
    expect(budget.stats()).toMatchObject({ granted: 5, deniedBudget: 5, tokens: 0 });
  });

  it('allows minPerSecond x ttl hedges over the ttl, paced, then refills as withdrawals expire', async () => {
    const clock = new VirtualClock();
    const budget = budgetPort({ ratio: 0, minPerSecond: 2, ttlMs: 10_000, clock });
    const take = (n: number) =>
      Array.from({ length: n }, () => budget.acquire()).filter((g) => g === 'granted').length;
    // The reserve is not spent in one burst: at most twice the floor in any second.
    const perSecond: number[] = [];
    for (let s = 0; s < 10; s++) {
      perSecond.push(take(30));
      await clock.advance(1000);
    }
    expect(perSecond.every((n) => n <= 4)).toBe(true);
    expect(perSecond.reduce((a, b) => a + b, 0)).toBe(20);
    for (let i = 0; i < 20; i++) budget.release();
    await clock.advance(10_000);
    expect(take(30)).toBe(4);
  });

  it('paces a burst: when every call in flight wants a hedge, a second gets at most 2x the sustained rate', () => {
    const { budget, at } = tenQuietSeconds();
    // 10 s at 1,000 calls/s with no hedge: 500 tokens banked, plus the floor's reserve of 100.
    expect(budget.stats().tokens).toBe(600);
    // The fleet slows: every call of the next second asks for a hedge.
    let granted = 0;
    for (let i = 0; i < 1000; i++) {
      at(10_000 + i);
      budget.deposit();
      if (budget.acquire() === 'granted') granted++;
    }
    // Sustained: 5% of 1,000 calls/s + 10/s = 60/s; the second gets at most 120 (12% of calls).
    expect(granted).toBeGreaterThan(60);
    expect(granted).toBeLessThanOrEqual(120);
  });

  it('aims the delay at 80% of the sustainable share, and lower as the bucket runs dry', () => {
    const { budget, at } = tenQuietSeconds();
    // 10 s at 1,000 calls/s: the budget sustains 5% + 10/s over 1,000/s = 6% of calls.
    expect(budget.affordableShare()).toBeCloseTo(0.8 * 0.06, 4);
    // The fleet slows: every call asks for a hedge, and the pace grants 120 a second. Below
    // the low-water mark (10% of a ttl's 600 tokens) the aim falls with what is left.
    const aims: { tokens: number; share: number }[] = [];
    for (let i = 0; i < 6000; i++) {
      at(10_000 + i);
      budget.deposit();
      if (budget.acquire() === 'granted') budget.release();
      if (i % 100 === 99)
        aims.push({ tokens: budget.stats().tokens, share: budget.affordableShare() });
    }
    const low = aims.filter((a) => a.tokens < 60);
    expect(low.length).toBeGreaterThan(0);
    // (The floor spread over the calls of the ttl moves a little as slices expire: ±10%.)
    for (const a of aims) {
      const aim = 0.048 * Math.min(1, a.tokens / 60);
      expect(Math.abs(a.share - aim)).toBeLessThanOrEqual(0.1 * aim + 0.001);
    }
    expect(Math.min(...aims.map((a) => a.share))).toBeLessThan(0.01);
  });

  it('expires deposits: a quiet period cannot bank a burst', async () => {
    const clock = new VirtualClock();
    const budget = budgetPort({ ratio: 0.5, minPerSecond: 0, ttlMs: 10_000, clock });
    for (let i = 0; i < 1000; i++) budget.deposit();
    expect(budget.stats().tokens).toBe(500);
    await clock.advance(10_000);
    expect(budget.stats().tokens).toBe(0);
    expect(budget.acquire()).toBe('denied_budget');
  });

  it('caps hedges in flight and frees the slot on release', () => {
    const budget = budgetPort({ ratio: 1, maxConcurrentHedges: 2, clock: new VirtualClock() });
    expect([budget.acquire(), budget.acquire(), budget.acquire()]).toEqual([
      'granted',
      'granted',
      'denied_concurrency',
    ]);
    budget.release();
    expect(budget.acquire()).toBe('granted');
  });

  it('holds hedges <= ratio x calls + minPerSecond x ttl over any window, whatever the timing', () => {
    const ttlMs = 10_000;
    const horizon = ttlMs - ttlMs / 10; // the window the ring guarantees fully live
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 5 }),
        fc.array(
          fc.record({
            gap: fc.integer({ min: 0, max: 2_000 }),
            calls: fc.nat(20),
            hedges: fc.nat(20),
          }),
          { minLength: 1, maxLength: 120 },
        ),
        (ratio, minPerSecond, steps) => {
          let now = 0;
          const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
          const budget = budgetPort({
            ratio,
            minPerSecond,
            ttlMs,
            clock,
            maxConcurrentHedges: 1e6,
          });
          const calls: number[] = [];
          const hedges: number[] = [];
          for (const step of steps) {
            now += step.gap;
            for (let i = 0; i < step.calls; i++) {
              budget.deposit();
              calls.push(now);
            }
            for (let i = 0; i < step.hedges; i++) {
              if (budget.acquire() === 'granted') hedges.push(now);
            }
          }
          const reserve = minPerSecond * (ttlMs / 1000);
          for (const start of hedges) {
            const end = start + horizon;
            const inWindow = hedges.filter((t) => t >= start && t <= end).length;
            const credited = calls.filter((t) => t > start - ttlMs && t <= end).length;
            expect(inWindow).toBeLessThanOrEqual(Math.floor(reserve + ratio * credited + 1e-9));
          }
          // And over the whole run: hedges <= ratio x calls + minPerSecond x (seconds + ttl).
          const bound = ratio * calls.length + minPerSecond * ((now + ttlMs) / 1000) + 1e-9;
          expect(hedges.length).toBeLessThanOrEqual(Math.floor(bound));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('cost-weighted budget', () => {
  it('bounds the extra load in the unit of cost: cheap calls cannot fund an expensive hedge', () => {
    const clock = new VirtualClock();
    const budget = budgetPort({
      ratio: 0.1,
      minPerSecond: 0,
      clock,
      cost: (req) => Number(req.headers['x-tokens'] ?? 1),
    });
    const req = (tokens: number) => ({
      method: 'POST',
      path: '/',
      headers: { 'x-tokens': String(tokens) },
      text: () => undefined,
    });
    expect(budget.weighted).toBe(true);
    for (let i = 0; i < 10; i++) budget.deposit(budget.costOf(req(100))); // 10 calls of 100 tokens: 100 in the bucket
    expect(budget.acquire(budget.costOf(req(1000)))).toBe('denied_budget');
    expect(budget.acquire(budget.costOf(req(100)))).toBe('granted');
    expect(budget.stats().tokens).toBe(0);
  });

  it('a cost function that throws or returns nonsense counts as 1', () => {
    const budget = budgetPort({
      cost: (req) => {
        if (req.path === '/throw') throw new Error('bad');
        return Number.NaN;
      },
    });
    const r = (path: string) => ({ method: 'GET', path, headers: {}, text: () => undefined });
    expect(budget.costOf(r('/throw'))).toBe(1);
    expect(budget.costOf(r('/nan'))).toBe(1);
  });
});
