import { type Clock, realClock } from '../clock.js';
import { type BudgetSettings, validateBudgetOptions } from '../config/budget-table.js';
import type { BudgetOptions } from '../config/options.js';
import type { KeyRequest } from '../request-view.js';
import { aimedShare } from './aim.js';
import {
  BUDGET_PORT,
  type BudgetPort,
  type BudgetStats,
  type HedgeBudget,
  type HedgeGrant,
} from './port.js';

const UNIT = 1_000_000;
const SLICES = 10;
/** The pace counts the last second in tenths. */
const PACE_SLICES = 10;
const PACE_SLICE_MS = 100;

/**
 * A token bucket shared by every route of a client (or by several clients): each call deposits
 * `ratio` of a token, each hedge withdraws one, and a reserve of `minPerSecond × ttl` tokens is
 * always there. Deposits and withdrawals expire after `ttlMs` (a ring of slices, as in Finagle's
 * RetryBudget), so over any window of length `ttlMs` the hedges are at most
 * `ratio × calls (in that window and the ttl before it) + minPerSecond × ttl`.
 * Amounts are integers (millionths of a token): the arithmetic is exact.
 *
 * Spending is paced too: the hedges granted in the last second stay within twice the sustained
 * rate (`ratio × calls per second + minPerSecond`, at least one hedge), even when the fleet slows
 * down all at once and every call in flight wants a hedge: the banked balance would otherwise go
 * in one burst, at the moment the fleet may be overloaded.
 */
export class TokenBudget implements BudgetPort, HedgeBudget {
  private readonly clock: Clock;
  private readonly depositAmount: number;
  private readonly ratio: number;
  private readonly costFn: ((request: KeyRequest) => number) | undefined;
  private readonly reserve: number;
  private readonly sliceMs: number;
  private readonly maxConcurrent: number;
  private readonly ring = new Array<number>(SLICES).fill(0);
  private sum = 0;
  /** Calls (in cost units) and overload penalties per slice, for the affordable share. */
  private readonly calls = new Array<number>(SLICES).fill(0);
  private callSum = 0;
  private readonly penaltyRing = new Array<number>(SLICES).fill(0);
  private penaltySum = 0;
  private readonly ttlMs: number;
  private readonly minPerSecond: number;
  private readonly createdAt: number;
  /** Units granted per tenth of a second, over the last second (the pace). */
  private readonly spent = new Array<number>(PACE_SLICES).fill(0);
  private spentSum = 0;
  private spentIndex: number;
  private sliceIndex: number;
  private inFlight = 0;
  private granted = 0;
  private deniedBudget = 0;
  private deniedConcurrency = 0;
  private penalties = 0;

  /** `clock` is used when the settings name none (a client's budget runs on the client's clock). */
  constructor(o: BudgetSettings, clock: Clock = realClock) {
    this.clock = o.clock ?? clock;
    this.depositAmount = Math.round(o.ratio * UNIT);
    this.ratio = o.ratio;
    this.costFn = o.cost;
    this.reserve = Math.round(o.minPerSecond * (o.ttlMs / 1000) * UNIT);
    this.sliceMs = o.ttlMs / SLICES;
    this.maxConcurrent = o.maxConcurrentHedges;
    this.sliceIndex = Math.floor(this.clock.now() / this.sliceMs);
    this.ttlMs = o.ttlMs;
    this.minPerSecond = o.minPerSecond;
    this.createdAt = this.clock.now();
    this.spentIndex = Math.floor(this.createdAt / PACE_SLICE_MS);
  }

  get [BUDGET_PORT](): BudgetPort {
    return this;
  }

  /** Credits the budget for one call. The engine calls this once per routed call. */
  deposit(cost = 1): void {
    this.add(cost === 1 ? this.depositAmount : Math.round(this.ratio * cost * UNIT));
    const i = this.sliceIndex % SLICES;
    this.calls[i] = (this.calls[i] ?? 0) + cost;
    this.callSum += cost;
  }

  /**
   * The share of calls the delay should aim to hedge at the current call rate (see
   * {@link aimedShare}). What the budget sustains over a ttl is what its calls earn (`ratio`)
   * plus the floor's reserve, less the overload penalties.
   */
  affordableShare(): number {
    this.rotate();
    const supply = this.ratio * this.callSum + this.reserve / UNIT - this.penaltySum;
    return aimedShare(supply, this.callSum, (this.reserve + this.sum) / UNIT);
  }

  /**
   * Asks for one hedge costing `cost` (1 unless the budget weighs calls with `cost`). When
   * granted, the caller must call {@link TokenBudget.release} once the hedge attempt has ended.
   */
  acquire(cost = 1): HedgeGrant {
    if (this.inFlight >= this.maxConcurrent) {
      this.deniedConcurrency++;
      return 'denied_concurrency';
    }
    this.rotate();
    const amount = cost === 1 ? UNIT : Math.round(cost * UNIT);
    if (this.reserve + this.sum < amount || !this.paceAllows(amount)) {
      this.deniedBudget++;
      return 'denied_budget';
    }
    this.spend(amount);
    this.add(-amount);
    this.inFlight++;
    this.granted++;
    return 'granted';
  }

  /** True when calls are weighed by a `cost` function. */
  get weighted(): boolean {
    return this.costFn !== undefined;
  }

  /** The cost of a call, as the `cost` option weighs it (1 without one). */
  costOf(request: KeyRequest): number {
    if (this.costFn === undefined) return 1;
    try {
      const c = this.costFn(request);
      return Number.isFinite(c) && c >= 0 ? c : 1;
    } catch {
      return 1;
    }
  }

  /**
   * Withdraws one token for a failure that says the fleet is overloaded (429, 503, connection
   * refused), as gRPC's retry throttling does: hedging backs off while the fleet says it is
   * overloaded, and recovers as the withdrawals expire. The balance may go below zero.
   */
  penalize(): void {
    this.add(-UNIT);
    this.penalties++;
    const i = this.sliceIndex % SLICES;
    this.penaltyRing[i] = (this.penaltyRing[i] ?? 0) + 1;
    this.penaltySum++;
  }

  /** Marks a granted hedge as ended (won, lost, failed or cancelled). */
  release(): void {
    if (this.inFlight > 0) this.inFlight--;
  }

  refund(cost = 1): void {
    const amount = cost === 1 ? UNIT : Math.round(cost * UNIT);
    this.add(amount);
    this.spend(-amount);
    if (this.granted > 0) this.granted--;
  }

  /** Current balance and counters. */
  stats(): BudgetStats {
    this.rotate();
    return {
      tokens: Math.max(0, Math.floor((this.reserve + this.sum) / UNIT)),
      inFlightHedges: this.inFlight,
      granted: this.granted,
      deniedBudget: this.deniedBudget,
      deniedConcurrency: this.deniedConcurrency,
      penalties: this.penalties,
    };
  }

  private add(amount: number): void {
    this.rotate();
    this.ring[this.sliceIndex % SLICES] = (this.ring[this.sliceIndex % SLICES] ?? 0) + amount;
    this.sum += amount;
  }

  /** Hedges per second the budget sustains at the current call rate (in cost units). */
  private sustainedPerSecond(): number {
    const seconds = Math.min(this.ttlMs, Math.max(1000, this.clock.now() - this.createdAt)) / 1000;
    return this.ratio * (this.callSum / seconds) + this.minPerSecond;
  }

  /** True when granting `amount` keeps the last second within twice the sustained rate. */
  private paceAllows(amount: number): boolean {
    this.rotateSpent();
    const cap = Math.max(UNIT, 2 * this.sustainedPerSecond() * UNIT);
    return this.spentSum + amount <= cap;
  }

  private spend(amount: number): void {
    this.rotateSpent();
    const i = this.spentIndex % PACE_SLICES;
    this.spent[i] = (this.spent[i] ?? 0) + amount;
    this.spentSum += amount;
  }

  private rotateSpent(): void {
    const index = Math.floor(this.clock.now() / PACE_SLICE_MS);
    if (index <= this.spentIndex) return;
    if (index - this.spentIndex >= PACE_SLICES) {
      this.spent.fill(0);
      this.spentSum = 0;
    } else {
      for (let i = this.spentIndex + 1; i <= index; i++) {
        this.spentSum -= this.spent[i % PACE_SLICES] ?? 0;
        this.spent[i % PACE_SLICES] = 0;
      }
    }
    this.spentIndex = index;
  }

  private rotate(): void {
    const index = Math.floor(this.clock.now() / this.sliceMs);
    if (index <= this.sliceIndex) return;
    if (index - this.sliceIndex >= SLICES) {
      this.ring.fill(0);
      this.sum = 0;
      this.calls.fill(0);
      this.callSum = 0;
      this.penaltyRing.fill(0);
      this.penaltySum = 0;
    } else {
      for (let i = this.sliceIndex + 1; i <= index; i++) {
        const j = i % SLICES;
        this.sum -= this.ring[j] ?? 0;
        this.ring[j] = 0;
        this.callSum -= this.calls[j] ?? 0;
        this.calls[j] = 0;
        this.penaltySum -= this.penaltyRing[j] ?? 0;
        this.penaltyRing[j] = 0;
      }
    }
    this.sliceIndex = index;
  }
}

/**
 * Creates a hedge budget that several clients can share (pass it as their `budget` option), so
 * that the extra load stays bounded across all of them. Throws a `TailcutError`
 * (`TAILCUT_INVALID_OPTION`) naming the option and value when an option is invalid.
 */
export function createBudget(options: BudgetOptions = {}): HedgeBudget {
  return new TokenBudget(validateBudgetOptions(options, 'budget'));
}
