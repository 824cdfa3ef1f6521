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
    const { deltas, giveBack } = l.send(0);
    expect(deltas.hedges).toBe(UNIT);
    expect(giveBack).toEqual({ slice: 7, amount: 5 * UNIT });
    l.spend(UNIT, 1); // during the round trip
    l.accept(view({ lease: 4 * UNIT, leaseSlice: 8, calls: UNIT }));
    expect(l.available()).toBe(3 * UNIT);
  });

  it('sends the deltas of failed syncs again, while younger than a ttl', () => {
    const l = new Ledger(settings, 0);
    l.deposit(1, 0);
    const first = l.send(0);
    l.requeue(first.deltas, 0);
    l.deposit(1, 5_000);
    expect(l.send(5_000).deltas.calls).toBe(2 * UNIT);
    l.requeue({ deposits: 0, calls: UNIT, hedges: 0, penalties: 0 }, 5_000);
    expect(l.send(20_000).deltas.calls).toBe(0);
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
