import { describe, expect, it } from 'vitest';
import { D2, D3 } from '../src/fleet/profile.js';
import { hedgedAtPercentile, quantile, unhedged } from '../src/theory.js';

const q = (s: (t: number) => number, p: number) => quantile(s, p);

describe('closed forms against docs/design.md', () => {
  it('D2 unhedged: p99 84.5 ms, p99.9 333.9 ms', () => {
    const t = unhedged(D2);
    expect(q(t.survival, 0.99)).toBeCloseTo(84.5, 0);
    expect(q(t.survival, 0.999)).toBeCloseTo(333.9, 0);
  });

  it('D2 one hedge at p95: d ≈ 40.2 ms, 5% hedged, p99 56.7 ms, p99.9 74.7 ms', () => {
    const t = hedgedAtPercentile(D2, 95);
    expect(t.delayMs).toBeCloseTo(40.2, 0);
    expect(t.extraLoad).toBeCloseTo(0.05, 3);
    expect(q(t.survival, 0.99)).toBeCloseTo(56.7, 0);
    expect(q(t.survival, 0.999)).toBeCloseTo(74.7, 0);
  });

  it('D3: unhedged p99.9 ≈ 1,292 ms; one hedge at p95 (d ≈ 14.2 ms): p99 20.6, p99.9 27.2', () => {
    expect(q(unhedged(D3).survival, 0.999)).toBeCloseTo(1292, -1);
    const t = hedgedAtPercentile(D3, 95);
    expect(t.delayMs).toBeCloseTo(14.2, 0);
    expect(q(t.survival, 0.99)).toBeCloseTo(20.6, 0);
    expect(q(t.survival, 0.999)).toBeCloseTo(27.2, 0);
  });
});
