/** A count of bytes that may be held at once across calls (the global buffering cap). */
export class ByteQuota {
  private readonly max: number;
  private usedBytes = 0;

  constructor(max: number) {
    this.max = max;
  }

  /** Takes `n` bytes if they fit; false (and nothing taken) if not. */
  take(n: number): boolean {
    if (this.usedBytes + n > this.max) return false;
    this.usedBytes += n;
    return true;
  }

  /** Returns `n` bytes taken earlier. */
  give(n: number): void {
    this.usedBytes = Math.max(0, this.usedBytes - n);
  }
}
