/**
 * The share of the sustainable hedge rate the delay aims at. Demand at a fixed percentile is a
 * Poisson count: aimed at the whole budget, the bucket empties now and then and the stalls that
 * arrive at that moment are refused (D3 at p95 asks for ~5.8% of calls against the 6% a 5% budget
 * with its floor sustains at 1,000 calls/s). At 80% the slack is several standard deviations.
 */
const HEADROOM = 0.8;
/** Below this share of a ttl's supply left in the bucket, the aim falls in proportion. */
const LOW_WATER = 0.1;

/**
 * The share of calls a budget's delay should aim to hedge (a budget's `affordableShare()`):
 * {@link HEADROOM} of what it sustains (`supply` tokens over the calls of a ttl), falling in
 * proportion to what is left once `balance` is under {@link LOW_WATER} of the supply, so that
 * the delay rises at once when demand outgrows the budget (the fleet slowed) instead of
 * refusing whichever calls come while the bucket is empty. A proportional controller on the
 * bucket's level (an integrator): it settles rather than oscillates. Infinity before any call.
 */
export function aimedShare(supply: number, calls: number, balance: number): number {
  if (!(calls > 0)) return Number.POSITIVE_INFINITY;
  const s = Math.max(0, supply);
  const level = s > 0 ? Math.min(1, Math.max(0, balance) / (LOW_WATER * s)) : 0;
  return (s / calls) * HEADROOM * level;
}
