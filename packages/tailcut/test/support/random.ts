/** A small seeded PRNG (mulberry32): the same seed gives the same sequence. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal draws by Box-Muller. */
export function normal(random: () => number): number {
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** docs/design.md's D2: lognormal, median 20 ms, sigma 0.4, plus 1% of attempts slowed x10. */
export function d2(random: () => number): number {
  const base = 20 * Math.exp(0.4 * normal(random));
  return random() < 0.01 ? base * 10 : base;
}

/** docs/design.md's D3: lognormal, median 10 ms, sigma 0.2; 1% of attempts slowed x100 (~1 s). */
export function d3(random: () => number): number {
  const base = 10 * Math.exp(0.2 * normal(random));
  return random() < 0.01 ? base * 100 : base;
}

/** Empirical percentile (0..100) of a sample. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}
