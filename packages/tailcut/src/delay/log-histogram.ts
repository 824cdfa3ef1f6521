import { HIGHEST_MS, LOWEST_MS } from './log-scale.js';

/** Factor between the bounds of a bucket: any value reads back within 0.99% (DDSketch's γ). */
const GAMMA = 1.02;
const LN_GAMMA = Math.log(GAMMA);
/** Bucket 0 holds values below 1 µs; bucket b ≥ 1 holds [1 µs·γ^(b−1), 1 µs·γ^b). */
const MAX_BUCKET = 1 + Math.floor(Math.log(HIGHEST_MS / LOWEST_MS) / LN_GAMMA);
/** Buckets added beyond the one that needed room, so that a widening range rarely reallocates. */
const SLACK = 16;

/** The counts of an empty histogram (shared: nothing is ever written to it). */
const EMPTY = new Uint16Array(0);

/** The bucket of a latency in ms (clamped to 1 µs..1 h). */
export function bucketOf(ms: number): number {
  if (!(ms >= LOWEST_MS)) return 0;
  if (ms >= HIGHEST_MS) return MAX_BUCKET;
  return Math.min(MAX_BUCKET, 1 + Math.floor(Math.log(ms / LOWEST_MS) / LN_GAMMA));
}

/** The value a bucket reads back as: within 0.99% of any value in it (0 for bucket 0). */
export function bucketValue(b: number): number {
  return b === 0 ? 0 : (LOWEST_MS * GAMMA ** (b - 1) * 2 * GAMMA) / (GAMMA + 1);
}

/**
 * A histogram of latencies (ms) in log buckets of fixed bounds (a factor of 1.02 apart, over
 * 1 µs..1 h: 1,112 buckets), so that two histograms merge exactly by adding their counts, and a
 * percentile reads back within 1% of the recorded value of that rank. Only the buckets between
 * the lowest and the highest value recorded are held, in one typed array of 16-bit counts
 * (32-bit once a count would overflow): a route whose latencies span 5 ms..1 s holds about 270
 * buckets, 540 bytes.
 */
export class LogHistogram {
  private counts: Uint16Array | Uint32Array = EMPTY;
  /** The bucket of `counts[0]`. */
  private lo = 0;
  private n = 0;
  private sum = 0;
  private sumSquares = 0;
  private maxMs = 0;
  private minMs = 0;

  /** Values recorded. */
  get count(): number {
    return this.n;
  }

  /** Largest value recorded, ms (exact; 0 when empty). */
  get max(): number {
    return this.maxMs;
  }

  /** Mean of the values recorded, ms (0 when empty). */
  get mean(): number {
    return this.n > 0 ? this.sum / this.n : 0;
  }

  /** Standard deviation of the values recorded, ms (0 when empty). */
  get stdDeviation(): number {
    if (this.n === 0) return 0;
    const mean = this.sum / this.n;
    return Math.sqrt(Math.max(0, this.sumSquares / this.n - mean * mean));
  }

  /** Bytes of counts held. */
  get byteLength(): number {
    return this.counts.byteLength;
  }

  /** Records one latency in ms (clamped to 0..1 h). */
  record(ms: number): void {
    const v = Math.min(HIGHEST_MS, Math.max(0, ms));
    this.addCount(bucketOf(v), 1);
    this.note(v, v, 1, v, v * v);
  }

  /** Adds the values of `other` (exactly: the buckets have the same bounds). */
  add(other: LogHistogram): void {
    if (other.n === 0) return;
    const c = other.counts;
    for (let i = 0; i < c.length; i++) {
      const k = c[i] as number;
      if (k > 0) this.addCount(other.lo + i, k);
    }
    this.note(other.minMs, other.maxMs, other.n, other.sum, other.sumSquares);
  }

  /** Forgets every value, and the room they took. */
  clear(): void {
    this.counts = EMPTY;
    this.lo = 0;
    this.n = 0;
    this.sum = 0;
    this.sumSquares = 0;
    this.maxMs = 0;
    this.minMs = 0;
  }

  /**
   * The value of nearest rank at `percentile` (0..100), ms: within 1% of the recorded value of
   * that rank, and never outside the lowest..highest recorded. 0 when empty.
   */
  valueAt(percentile: number): number {
    if (this.n === 0) return 0;
    const rank = Math.min(this.n, Math.max(1, Math.ceil((percentile / 100) * this.n)));
    const c = this.counts;
    let seen = 0;
    for (let i = 0; i < c.length; i++) {
      seen += c[i] as number;
      if (seen >= rank) {
        return Math.min(this.maxMs, Math.max(this.minMs, bucketValue(this.lo + i)));
      }
    }
    return this.maxMs;
  }

  /** Values in buckets above the one `ms` falls in (so at least ~`ms`; within 2% of it). */
  countAbove(ms: number): number {
    const first = Math.max(0, bucketOf(ms) + 1 - this.lo);
    const c = this.counts;
    let above = 0;
    for (let i = first; i < c.length; i++) above += c[i] as number;
    return above;
  }

  private note(min: number, max: number, n: number, sum: number, sumSquares: number): void {
    this.minMs = this.n === 0 ? min : Math.min(this.minMs, min);
    this.maxMs = this.n === 0 ? max : Math.max(this.maxMs, max);
    this.n += n;
    this.sum += sum;
    this.sumSquares += sumSquares;
  }

  private addCount(b: number, k: number): void {
    let i = b - this.lo;
    if (i < 0 || i >= this.counts.length) i = this.widen(b);
    const next = (this.counts[i] as number) + k;
    if (next > 0xffff && this.counts instanceof Uint16Array)
      this.counts = Uint32Array.from(this.counts);
    this.counts[i] = next;
  }

  /** Makes room for bucket `b`; returns its index. */
  private widen(b: number): number {
    const old = this.counts;
    const empty = old.length === 0;
    const lo = empty ? Math.max(0, b - SLACK) : Math.max(0, Math.min(this.lo, b - SLACK));
    const hi = empty
      ? Math.min(MAX_BUCKET, b + SLACK)
      : Math.min(MAX_BUCKET, Math.max(this.lo + old.length - 1, b + SLACK));
    const counts =
      old instanceof Uint32Array ? new Uint32Array(hi - lo + 1) : new Uint16Array(hi - lo + 1);
    if (!empty) counts.set(old, this.lo - lo);
    this.counts = counts;
    this.lo = lo;
    return b - lo;
  }
}
