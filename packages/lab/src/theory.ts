import type { Profile } from './fleet/profile.js';

/** Standard normal CDF (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7). */
function phi(x: number): number {
  const t = 1 / (1 + (0.3275911 * Math.abs(x)) / Math.SQRT2);
  const poly =
    t *
    (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-(x * x) / 2);
  return x >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** Survival function S(t) = P(attempt > t ms) of a profile's body and stalls (identical replicas). */
export function survival(profile: Profile): (t: number) => number {
  const p = profile.stallProbability ?? 0;
  const k = profile.stallFactor ?? 1;
  const { medianMs: m, sigma } = profile;
  return (t) => {
    if (t <= 0) return 1;
    const body = phi((Math.log(t) - Math.log(m)) / sigma);
    const stall = phi((Math.log(t) - Math.log(m * k)) / sigma);
    return 1 - ((1 - p) * body + p * stall);
  };
}

/** The smallest t with S(t) <= 1 - q (q in 0..1), by bisection. */
export function quantile(s: (t: number) => number, q: number): number {
  let lo = 0;
  let hi = 1;
  while (s(hi) > 1 - q) hi *= 2;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (s(mid) > 1 - q) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** What theory says of a strategy on a profile: its latency survival and its extra load. */
export interface Theory {
  survival: (t: number) => number;
  extraLoad: number;
  /** The delay the strategy uses, ms (undefined for no hedging). */
  delayMs?: number;
}

/** No hedging: one attempt. */
export function unhedged(profile: Profile): Theory {
  return { survival: survival(profile), extraLoad: 0 };
}

/**
 * One backup after `d` ms to an independent replica: S_T(t) = S(t) for t < d,
 * S(t)·S(t−d) after; the hedge rate is S(d) (docs/design.md).
 */
export function hedgedAt(profile: Profile, d: number): Theory {
  const s = survival(profile);
  return { survival: (t) => (t < d ? s(t) : s(t) * s(t - d)), extraLoad: s(d), delayMs: d };
}

/** Timeout after `d` ms and one retry: S_T(t) = S(t) for t < d, S(d)·S(t−d) after. */
export function retryAfter(profile: Profile, d: number): Theory {
  const s = survival(profile);
  return { survival: (t) => (t < d ? s(t) : s(d) * s(t - d)), extraLoad: s(d), delayMs: d };
}

/** Hedging at the profile's own percentile `p` (0..100): tailcut's adaptive delay. */
export function hedgedAtPercentile(profile: Profile, p: number): Theory {
  return hedgedAt(profile, quantile(survival(profile), p / 100));
}
