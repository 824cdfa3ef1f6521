import * as hdr from 'hdr-histogram-js';

/** Highest latency a window tracks: one hour, in microseconds (LLM calls can be long). */
const HIGHEST_TRACKABLE_US = 3_600_000_000;

/** Number of rotating slices a window is split into. */
const WINDOW_SLICES = 6;

function newHistogram(): hdr.Histogram {
  return hdr.build({
    bitBucketSize: 32,
    autoResize: false,
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_TRACKABLE_US,
    numberOfSignificantValueDigits: 2,
  });
}

/**
 * A rolling window of HDR histograms in integer microseconds: `windowMs` split in rotating
 * slices, with a running aggregate so that a percentile query never merges slices.
 * Rotation is lazy (driven by the clock readings passed in): no timers.
 */
export class WindowHistogram {
  private readonly sliceMs: number;
  private readonly slices: hdr.Histogram[];
  private readonly total = newHistogram();
  private sliceIndex: number;

  constructor(windowMs: number, nowMs: number) {
    this.sliceMs = windowMs / WINDOW_SLICES;
    this.slices = Array.from({ length: WINDOW_SLICES }, newHistogram);
    this.sliceIndex = Math.floor(nowMs / this.sliceMs);
  }

  /** Records one value in microseconds (clamped to 1 µs .. 1 h). */
  record(valueUs: number, nowMs: number): void {
    this.rotate(nowMs);
    const v = Math.min(HIGHEST_TRACKABLE_US, Math.max(1, Math.round(valueUs)));
    (this.slices[this.sliceIndex % WINDOW_SLICES] as hdr.Histogram).recordValue(v);
    this.total.recordValue(v);
  }

  /** Number of values in the window. */
  count(nowMs: number): number {
    this.rotate(nowMs);
    return this.total.totalCount;
  }

  /** Value at `percentile` (0..100) in microseconds; 0 when empty. */
  valueAtPercentile(percentile: number, nowMs: number): number {
    this.rotate(nowMs);
    return this.total.getValueAtPercentile(percentile);
  }

  /** The aggregate histogram of the window (read-only use). */
  snapshot(nowMs: number): hdr.Histogram {
    this.rotate(nowMs);
    return this.total;
  }

  private rotate(nowMs: number): void {
    const index = Math.floor(nowMs / this.sliceMs);
    if (index <= this.sliceIndex) return;
    if (index - this.sliceIndex >= WINDOW_SLICES) {
      for (const slice of this.slices) slice.reset();
      this.total.reset();
    } else {
      for (let i = this.sliceIndex + 1; i <= index; i++) {
        const slice = this.slices[i % WINDOW_SLICES] as hdr.Histogram;
        if (slice.totalCount > 0) {
          this.total.subtract(slice);
          slice.reset();
        }
      }
    }
    this.sliceIndex = index;
  }
}
