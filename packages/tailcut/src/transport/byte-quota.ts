/** A count of bytes that may be held at once across calls (the global buffering cap). */
export class ByteQuota {
  readonly #max: number;
  #used = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Takes `n` bytes if they fit; false (and nothing taken) if not. */
  take(n: number): boolean {
    if (this.#used + n > this.#max) return false;
    this.#used += n;
    return true;
  }

  /** Returns `n` bytes taken earlier. */
  give(n: number): void {
    this.#used = Math.max(0, this.#used - n);
  }

  /** Bytes held now. */
  get used(): number {
    return this.#used;
  }
}
