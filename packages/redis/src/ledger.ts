import type { FleetView, SyncDeltas } from './sync-script.js';

/** Amounts are integers in millionths (of a token, or of a call's cost): the arithmetic is exact. */
export const UNIT = 1_000_000;
/** Slices of the window (as tailcut's own budget and the keys in Redis). */
export const SLICES = 10;
const PACE_SLICES = 10;
const PACE_SLICE_MS = 100;

/** The ledger's settings. */
export interface LedgerSettings {
  ratio: number;
  minPerSecond: number;
  ttlMs: number;
}

/** A lease taken in Redis: given back (undone) by the next sync. */
export interface Lease {
  slice: number;
  amount: number;
  /** The sync that took it: Redis gives it back only if no later sync of this instance ran since. */
  seq: number;
}

/**
 * Deltas as first sent by the sync numbered `seq` at `at`. Resent under the same number, so that
 * Redis adds them only if that sync never ran there (a sync given up may still run later).
 */
export interface SyncPart {
  seq: number;
  at: number;
  deltas: SyncDeltas;
}

const zero = (): SyncDeltas => ({ deposits: 0, calls: 0, hedges: 0, penalties: 0 });

function addInto(into: SyncDeltas, d: SyncDeltas): void {
  into.deposits += d.deposits;
  into.calls += d.calls;
  into.hedges += d.hedges;
  into.penalties += d.penalties;
}

/**
 * One instance's side of the fleet budget, with no I/O: what it may spend now (the lease from its
 * last sync, plus what its own calls earned since, less what it spent since), what it has not
 * told Redis yet, its own calls over the window (its share) and the pace of its spending. The
 * fleet budget drives it; tests drive it with any clock readings.
 */
export class Ledger {
  private readonly s: LedgerSettings;
  /** What is left of the last lease, after the spending reported with the sync that follows it. */
  private lease = 0;
  /** The lease to give back in Redis at the next sync. */
  private taken: Lease | undefined;
  /** Since the last sync was sent. */
  private unsent = zero();
  /** Deltas of syncs that failed, to send again while younger than a ttl. */
  private pending: SyncPart[] = [];
  /** The number of the last sync sent. */
  private seq = 0;
  private readonly calls = new Array<number>(SLICES).fill(0);
  private callSum = 0;
  private sliceIndex: number;
  private readonly spent = new Array<number>(PACE_SLICES).fill(0);
  private spentSum = 0;
  private spentIndex: number;
  /** The fleet's window at the last sync, or undefined before the first. */
  view: FleetView | undefined;

  constructor(settings: LedgerSettings, now: number) {
    this.s = settings;
    this.sliceIndex = Math.floor(now / this.sliceMs);
    this.spentIndex = Math.floor(now / PACE_SLICE_MS);
  }

  private get sliceMs(): number {
    return this.s.ttlMs / SLICES;
  }

  /** One call of weight `cost`: it earns `ratio × cost`. */
  deposit(cost: number, now: number): void {
    const calls = Math.round(cost * UNIT);
    this.unsent.deposits += Math.round(this.s.ratio * cost * UNIT);
    this.unsent.calls += calls;
    this.rotate(now);
    this.calls[this.sliceIndex % SLICES] = (this.calls[this.sliceIndex % SLICES] ?? 0) + calls;
    this.callSum += calls;
  }

  /** Millionths of a token this instance may spend now. */
  available(): number {
    return this.lease + this.unsent.deposits - this.unsent.hedges - this.unsent.penalties;
  }

  /** True when a hedge of `amount` fits the lease and the pace. */
  affords(amount: number, now: number): boolean {
    return this.available() >= amount && this.paceAllows(amount, now);
  }

  /** Records a hedge of `amount` (negative: a refund). */
  spend(amount: number, now: number): void {
    this.unsent.hedges += amount;
    this.rotateSpent(now);
    this.spent[this.spentIndex % PACE_SLICES] =
      (this.spent[this.spentIndex % PACE_SLICES] ?? 0) + amount;
    this.spentSum += amount;
  }

  /** Records an overload penalty: one token withdrawn. */
  penalize(): void {
    this.unsent.penalties += UNIT;
  }

  /** This instance's calls in the window, millionths. */
  ownCalls(now: number): number {
    this.rotate(now);
    return this.callSum;
  }

  /** This instance's share of the fleet: its calls ÷ the fleet's, or 1 ÷ instances; 1 before any sync. */
  share(): number {
    const v = this.view;
    if (v === undefined) return 1;
    if (v.calls > 0) return Math.min(1, this.callSum / v.calls);
    return 1 / Math.max(1, v.instances);
  }

  /**
   * Starts a sync, numbered one more than the last: returns what to send (the unsent deltas under
   * the new number first, then those of failed syncs first sent less than a ttl ago, under
   * theirs) and the lease to give back; the lease left is what remains after the spending sent.
   */
  send(now: number): { parts: SyncPart[]; giveBack: Lease | undefined } {
    const sent = this.unsent;
    this.lease += sent.deposits - sent.hedges - sent.penalties;
    this.unsent = zero();
    const fresh = { seq: ++this.seq, at: now, deltas: zero() };
    addInto(fresh.deltas, sent);
    const parts = [fresh, ...this.pending.filter((p) => now - p.at < this.s.ttlMs)];
    this.pending = [];
    return { parts, giveBack: this.taken };
  }

  /**
   * The last sync sent answered (one is in flight at a time): the fleet's window and a new lease,
   * from which what was spent since is taken.
   */
  accept(view: FleetView): void {
    this.view = view;
    this.lease = view.lease;
    this.taken =
      view.lease > 0 ? { slice: view.leaseSlice, amount: view.lease, seq: this.seq } : undefined;
  }

  /** A sync failed or was given up: its parts are kept to send again (while younger than a ttl). */
  requeue(parts: readonly SyncPart[]): void {
    this.pending.push(...parts);
  }

  /** Hedges per second this instance sustains: its share of the fleet's rate. */
  private sustainedPerSecond(): number {
    const v = this.view;
    const fleetCalls = v === undefined ? this.callSum : v.calls;
    const perSecond = fleetCalls / UNIT / (this.s.ttlMs / 1000);
    return this.share() * (this.s.ratio * perSecond + this.s.minPerSecond);
  }

  /** True when `amount` keeps the last second within twice the sustained rate (at least one hedge). */
  private paceAllows(amount: number, now: number): boolean {
    this.rotateSpent(now);
    const cap = Math.max(UNIT, 2 * this.sustainedPerSecond() * UNIT);
    return this.spentSum + amount <= cap;
  }

  private rotateSpent(now: number): void {
    const index = Math.floor(now / PACE_SLICE_MS);
    if (index <= this.spentIndex) return;
    for (let i = this.spentIndex + 1; i <= Math.min(index, this.spentIndex + PACE_SLICES); i++) {
      this.spentSum -= this.spent[i % PACE_SLICES] ?? 0;
      this.spent[i % PACE_SLICES] = 0;
    }
    this.spentIndex = index;
  }

  private rotate(now: number): void {
    const index = Math.floor(now / this.sliceMs);
    if (index <= this.sliceIndex) return;
    for (let i = this.sliceIndex + 1; i <= Math.min(index, this.sliceIndex + SLICES); i++) {
      this.callSum -= this.calls[i % SLICES] ?? 0;
      this.calls[i % SLICES] = 0;
    }
    this.sliceIndex = index;
  }
}
