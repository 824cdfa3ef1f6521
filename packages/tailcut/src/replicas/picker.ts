/**
 * Chooses where each attempt of a route goes. Replicas are indices into the route's origin
 * list; with no list, every attempt goes to the request's own origin (index -1), and with one
 * replica every attempt goes to it: a load balancer behind one address spreads them.
 */
export class ReplicaPicker {
  readonly origins: readonly string[];
  private readonly inFlight: number[];
  private next = 0;

  constructor(origins: readonly string[]) {
    this.origins = origins;
    this.inFlight = origins.map(() => 0);
  }

  /** The primary attempt's replica: round robin. */
  primary(): number {
    if (this.origins.length === 0) return -1;
    const i = this.next;
    this.next = (i + 1) % this.origins.length;
    return i;
  }

  /**
   * A hedge's replica: the untried one with the fewest attempts in flight (ties in round-robin
   * order), or `undefined` when every replica of a multi-replica route has been tried.
   */
  hedge(tried: readonly number[]): number | undefined {
    const n = this.origins.length;
    if (n <= 1) return n - 1;
    let best: number | undefined;
    for (let k = 0; k < n; k++) {
      const i = (this.next + k) % n;
      if (tried.includes(i)) continue;
      if (best === undefined || (this.inFlight[i] ?? 0) < (this.inFlight[best] ?? 0)) best = i;
    }
    return best;
  }

  /** The origin of replica `index`, or `undefined` for the request's own origin. */
  origin(index: number): string | undefined {
    // A negative index on an array is a slow dictionary lookup: test it first.
    return index < 0 ? undefined : this.origins[index];
  }

  /** Counts an attempt starting on `index`. */
  begin(index: number): void {
    if (index >= 0) this.inFlight[index] = (this.inFlight[index] ?? 0) + 1;
  }

  /** Counts an attempt on `index` ending. */
  end(index: number): void {
    if (index >= 0) this.inFlight[index] = (this.inFlight[index] ?? 1) - 1;
  }
}
