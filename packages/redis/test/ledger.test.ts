import { describe, expect, it } from 'vitest';
import { Ledger, UNIT } from '../src/ledger.js';
import type { FleetView } from '../src/sync-script.js';

const settings = { ratio: 0.05, minPerSecond: 10, ttlMs: 10_000 };

function view(over: Partial<FleetView>): FleetView {
  return {
    deposits: 0,
    calls: 0,
    hedges: 0,
    penalties: 0,
    instances: 1,
    lease: 0,
    leaseSlice: 0,
    ...over,
  };
}

describe('Ledger', () => {
  it('spends the lease plus what its own calls earned since, no more', () => {
    const l = new Ledger(settings, 0);
    l.send(0);
    l.accept(view({ lease: 2 * UNIT, calls: 1_000 * UNIT, leaseSlice: 0 }));
    for (let i = 0; i < 20; i++) l.deposit(1, 10); // earns one token
    expect(l.available()).toBe(3 * UNIT);
    l.spend(UNIT, 10);
    l.spend(UNIT, 10);
    l.spend(UNIT, 10);
    expect(l.affords(UNIT, 10)).toBe(false);
  });

  it('takes hedges spent while a sync was in flight from the new lease, and gives the old one back', () => {
    const l = new Ledger(settings, 0);
    l.accept(view({ lease: 5 * UNIT, leaseSlice: 7, calls: UNIT }));
    l.spend(UNIT, 0);
    const { parts, giveBack } = l.send(0);
    expect(parts.map((p) => p.deltas.hedges)).toEqual([UNIT]);
    expect(giveBack).toEqual({ slice: 7, amount: 5 * UNIT, seq: 0 });
    l.spend(UNIT, 1); // during the round trip
    l.accept(view({ lease: 4 * UNIT, leaseSlice: 8, calls: UNIT }));
    expect(l.available()).toBe(3 * UNIT);
  });

  it('sends the deltas of failed syncs again under their first number, while younger than a ttl', () => {
    const l = new Ledger(settings, 0);
    l.deposit(1, 0);
    const first = l.send(0);
    l.requeue(first.parts);
    l.deposit(1, 5_000);
    const second = l.send(5_000);
    expect(second.parts.map((p) => [p.seq, p.deltas.calls])).toEqual([
      [2, UNIT],
      [1, UNIT],
    ]);
    l.requeue(second.parts);
    // Ten seconds after the first was sent, only the second's part is still resent.
    expect(l.send(12_000).parts.map((p) => [p.seq, p.deltas.calls])).toEqual([
      [3, 0],
      [2, UNIT],
    ]);
  });

  it("paces spending at twice this instance's share of the sustained rate", () => {
    const l = new Ledger(settings, 0);
    // Half of a fleet making 100 calls/s over the 10 s window: share 0.5 of (5 + 10)/s.
    for (let i = 0; i < 500; i++) l.deposit(1, 0);
    l.accept(view({ lease: 1_000 * UNIT, calls: 1_000 * UNIT, instances: 2 }));
    let granted = 0;
    while (l.affords(UNIT, 0)) {
      l.spend(UNIT, 0);
      granted++;
    }
    expect(granted).toBe(15);
    expect(l.affords(UNIT, 1_000)).toBe(true);
  });

  it('shares by calls, or equally before any call', () => {
    const l = new Ledger(settings, 0);
    expect(l.share()).toBe(1);
    l.accept(view({ instances: 4 }));
    expect(l.share()).toBe(0.25);
    for (let i = 0; i < 10; i++) l.deposit(1, 0);
    l.accept(view({ instances: 4, calls: 40 * UNIT }));
    expect(l.share()).toBe(0.25);
  });
});
