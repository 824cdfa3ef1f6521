/**
 * `percentile: 'auto'`: how far above the base percentile the hedge delay can rise before the
 * tail pays for the hedges it saves.
 *
 * From the remembered latencies the engine can predict the tail of a call hedged once at any
 * delay d (docs/design.md): `S_T(t) = S(t) · S(t − d)` for t ≥ d, and the hedge rate is `S(d)`.
 * Raising the delay from the base percentile to a higher one cuts the hedges by a factor and
 * lengthens the predicted p99.9 by another. Where the fast calls are a narrow mode and the slow
 * ones a separate one (D3: 99% ~10 ms, 1% ~1 s), the hedges between the base and the edge of the
 * fast mode buy almost nothing: p95 → p98.75 cuts them 4× for a p99.9 about 12% longer. Where
 * the slow calls merge into a wide body (D2), each hedge given up costs tail: the same 4× costs
 * about 25%. The delay rises while the trade stays below {@link ELASTICITY}: each halving of
 * the hedges may lengthen the p99.9 by at most 2^0.1 − 1 ≈ 7% (D3's trade is ≤ 0.09 up to
 * p98.75, D2's ≥ 0.118 from p96 on, so D2 stays at its base).
 *
 * Latencies the engine recorded as censored (a primary cancelled while still running) count as
 * still running at every later time: under hedging the slow calls are never seen to finish, and
 * assuming they would have run on is the cautious reading.
 */

/** The tail the trade is judged on. */
const OBJECTIVE = 0.999;
/** Largest accepted ratio of the tail's relative growth to the hedges' relative cut (log-log). */
const ELASTICITY = 0.1;
/** Candidate percentiles are tried in steps of this much above the base. */
const STEP = 0.25;
/** A candidate is judged only once it cuts the hedges by at least this factor (less is noise). */
const MIN_CUT = 1.25;
/** Values above a candidate delay it needs to be read at all. */
const MIN_ABOVE = 10;
/** Values needed before the delay moves off the base percentile. */
export const AUTO_MIN_VALUES = 200;
/** The highest percentile the delay may rise to. */
const MAX = 99.5;

/**
 * The percentile (≥ `base`) the delay should sit at, from `sorted` (the first `n` remembered
 * latencies, ascending, censored ones included) and `censored` (the first `m` censored ones,
 * ascending).
 */
export function autoPercentile(
  sorted: Float64Array,
  n: number,
  censored: Float64Array,
  m: number,
  base: number,
): number {
  if (n < AUTO_MIN_VALUES) return base;
  const above = (t: number) => n - upperBound(sorted, n, t);
  /** A primary's survival, the censored counted as still running. */
  const running = (t: number) => (above(t) + upperBound(censored, m, t)) / n;
  const max = sorted[n - 1] as number;
  /** The predicted p99.9 of a call hedged at `d`: the least t ≥ d with S(t)·S(t − d) ≤ 0.1%. */
  const tail = (d: number) => {
    let lo = d;
    let hi = d + max;
    for (let i = 0; i < 40; i++) {
      const t = (lo + hi) / 2;
      if (running(t) * (above(t - d) / n) > 1 - OBJECTIVE) lo = t;
      else hi = t;
    }
    return hi;
  };
  const at = (p: number) => sorted[Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1))];
  const baseTail = tail(at(base) as number);
  if (!(baseTail > 0)) return base;
  let best = base;
  for (let p = base + STEP; p <= MAX && n * (1 - p / 100) >= MIN_ABOVE; p += STEP) {
    const cut = (100 - base) / (100 - p);
    if (cut < MIN_CUT) continue;
    const growth = Math.log(tail(at(p) as number) / baseTail);
    if (growth > ELASTICITY * Math.log(cut)) break;
    best = p;
  }
  return best;
}

/** How many of the first `n` values of `xs` (ascending) are ≤ `t`. */
function upperBound(xs: Float64Array, n: number, t: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((xs[mid] as number) <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
