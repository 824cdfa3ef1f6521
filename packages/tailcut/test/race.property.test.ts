import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type SimOutcome, simulation } from './support/sim.js';

const outcome = fc.record({
  ms: fc.integer({ min: 0, max: 200 }),
  result: fc.constantFrom<SimOutcome['result']>('ok', 'ok', 'ok', 'retry', 'fail', 'error'),
});

const scenario = fc.record({
  maxAttempts: fc.integer({ min: 1, max: 5 }),
  replicas: fc.integer({ min: 0, max: 4 }),
  delayMs: fc.integer({ min: 0, max: 60 }),
  ratio: fc.double({ min: 0, max: 1, noNaN: true }),
  minPerSecond: fc.integer({ min: 0, max: 5 }),
  maxConcurrentHedges: fc.integer({ min: 0, max: 6 }),
  calls: fc.array(
    fc.record({
      at: fc.integer({ min: 0, max: 3_000 }),
      attempts: fc.array(outcome, { minLength: 5, maxLength: 5 }),
      abortAt: fc.option(fc.integer({ min: 0, max: 250 }), { freq: 4 }),
    }),
    { minLength: 1, maxLength: 40 },
  ),
});

describe('race invariants (fast-check, virtual clock)', () => {
  it('bounded attempts, one outcome per call, nothing alive after settle, first acceptable wins, hedges within budget', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const sim = simulation(
          {
            ...(s.replicas > 0
              ? { replicas: Array.from({ length: s.replicas }, (_, i) => `http://r${i}:80`) }
              : {}),
            hedge: { maxAttempts: s.maxAttempts, initialDelayMs: s.delayMs, minSamples: 1e6 },
          },
          {
            ratio: s.ratio,
            minPerSecond: s.minPerSecond,
            maxConcurrentHedges: s.maxConcurrentHedges,
          },
        );
        const settled: {
          at: number;
          ok: boolean;
          accepted?: boolean;
          index?: number;
          reason?: unknown;
          /** The caller's abort reason, when the abort came before the call settled. */
          abortedWith?: Error | undefined;
        }[] = [];
        const aborted = new Map<number, Error>();
        s.calls.forEach((c, id) => {
          sim.clock.setTimeout(() => {
            const controller = new AbortController();
            if (c.abortAt !== null) {
              sim.clock.setTimeout(() => {
                const reason = new Error(`abort ${id}`);
                aborted.set(id, reason);
                controller.abort(reason);
              }, c.abortAt);
            }
            sim
              .call(id, (i) => c.attempts[i] as SimOutcome, { signal: controller.signal })
              .then(
                (win) => {
                  settled[id] = {
                    at: sim.clock.now(),
                    ok: true,
                    accepted: win.accepted,
                    index: win.attempt.index,
                    abortedWith: aborted.get(id),
                  };
                },
                (reason: unknown) => {
                  settled[id] = {
                    at: sim.clock.now(),
                    ok: false,
                    reason,
                    abortedWith: aborted.get(id),
                  };
                },
              );
          }, c.at);
        });
        await sim.clock.runAll();

        expect(settled.filter(Boolean)).toHaveLength(s.calls.length);
        s.calls.forEach((_, id) => {
          const end = settled[id];
          const mine = sim.attempts.filter((a) => a.call === id);
          expect(end).toBeDefined();
          if (end === undefined) return;
          expect(mine.length).toBeLessThanOrEqual(s.maxAttempts);
          for (const a of mine) {
            expect(a.startedAt).toBeLessThanOrEqual(end.at);
            const endedAt = a.committedAt ?? a.abortedAt;
            expect(endedAt).toBeDefined();
            expect(endedAt).toBeLessThanOrEqual(end.at);
          }
          const acceptable = mine.filter((a) => a.result === 'ok' && a.committedAt !== undefined);
          if (end.ok && end.accepted) {
            const winner = mine.find((a) => a.ctx.index === end.index);
            expect(winner?.result).toBe('ok');
            expect(winner?.committedAt).toBe(end.at);
            for (const other of acceptable) {
              expect(other.committedAt).toBeGreaterThanOrEqual(winner?.committedAt ?? 0);
            }
          } else if (end.abortedWith !== undefined) {
            expect(end.ok).toBe(false);
            expect(end.reason).toBe(end.abortedWith);
          } else {
            expect(acceptable).toHaveLength(0);
          }
        });

        const hedges = sim.attempts.filter((a) => a.ctx.kind === 'hedge').length;
        const seconds = sim.clock.now() / 1000;
        expect(hedges).toBeLessThanOrEqual(
          Math.floor(s.ratio * s.calls.length + s.minPerSecond * (seconds + 10) + 1e-9),
        );
        expect(sim.budget.stats().inFlightHedges).toBe(0);
        expect(sim.clock.pending).toBe(0);
      }),
      { numRuns: 2000 },
    );
  });
});
