import { randomBytes } from 'node:crypto';
import { type BudgetStats, createBudget, type HedgeBudget, type KeyRequest } from 'tailcut';
import {
  aimedShare,
  BUDGET_PORT,
  type BudgetPort,
  type HedgeGrant,
  type RouteTap,
} from 'tailcut/engine';
import { MAX_READ_KEYS, PUBLISH_SCRIPT, READ_SCRIPT } from './histogram-scripts.js';
import { encodeSnapshot, mergeSnapshots, RouteHistograms, seedSamples } from './histograms.js';
import { baseKey, histogramKey } from './keys.js';
import { Ledger, SLICES, type SyncPart, UNIT } from './ledger.js';
import { borrowedLink, ownLink, type RedisLink } from './link.js';
import {
  type FleetBudgetOptions,
  type FleetMode,
  type FleetSettings,
  validateFleetOptions,
} from './options.js';
import { parseView, SettingsMismatch, SYNC_SCRIPT, settingsFingerprint } from './sync-script.js';
import { type FleetTelemetry, fleetTelemetry } from './telemetry.js';

/** A fleet budget's figures: this instance's, and the fleet's window as of the last sync. */
export interface FleetBudgetStats extends BudgetStats {
  /** `shared`: deciding against a lease from Redis; `local`: on a local budget with this instance's share of the floor. */
  mode: FleetMode;
  /** Why the instance is in local mode (the last sync error), or undefined. */
  localReason: string | undefined;
  /** Instances seen in Redis over the last window. */
  instances: number;
  /** The fleet's calls over the window (in cost units). */
  fleetCalls: number;
  /** The fleet's hedges sent over the window (in cost units). */
  fleetHedges: number;
  /** This instance's share of the fleet's calls (of the floor, in local mode). */
  share: number;
  /** Syncs that succeeded and failed since creation. */
  syncs: number;
  syncFailures: number;
  /** Routes whose delays were seeded from the fleet's histograms. */
  warmRoutes: number;
  /** Why the fleet's histograms could not be read at start (routes started cold), or undefined. */
  warmStartError: string | undefined;
}

/** A hedge budget shared by every instance of a fleet through Redis. Pass it as tailcut's `budget`. */
export interface FleetBudget extends HedgeBudget {
  /** This instance's id in Redis (random, per budget). */
  readonly instance: string;
  stats(): FleetBudgetStats;
  /**
   * Gives back this instance's unused lease, publishes its histograms, stops syncing and closes
   * the connection the budget opened (destroying it if Redis hangs), all within `timeoutMs`; a
   * client passed in is left open. Idempotent. A client still using the budget afterwards keeps
   * working on a local budget with this instance's last share.
   */
  close(): Promise<void>;
}

const now = () => performance.now();

/**
 * Waits for `promise` at most `ms`; rejects with a timeout error after. `unref`: the deadline
 * alone does not keep the process alive (a background sync after `close()`).
 */
function within<T>(promise: Promise<T>, ms: number, unref = false): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer from Redis within ${Math.round(ms)} ms`)),
      Math.max(0, ms),
    );
    if (unref) timer.unref();
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

class RedisFleetBudget implements BudgetPort, FleetBudget {
  readonly instance = randomBytes(8).toString('hex');
  private readonly s: FleetSettings;
  private readonly link: RedisLink;
  private readonly base: string;
  private readonly ledger: Ledger;
  private readonly reserve: number;
  private readonly fingerprint: string;
  private readonly histograms = new RouteHistograms();
  private readonly routeNumbers = new Map<string, number>();
  private readonly telemetry: FleetTelemetry;
  private local: BudgetPort | undefined;
  private localReason: string | undefined;
  private mode: FleetMode = 'shared';
  private inflight: { at: number; parts: SyncPart[]; done: Promise<void> } | undefined;
  /** Set when `close()` is first called. */
  private stopping = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private publishTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private fleet: Map<string, import('hdr-histogram-js').Histogram> | undefined;
  private inFlight = 0;
  private granted = 0;
  private deniedBudget = 0;
  private deniedConcurrency = 0;
  private penalties = 0;
  private syncs = 0;
  private syncFailures = 0;
  private warmRoutes = 0;
  private warmStartError: string | undefined;

  constructor(settings: FleetSettings) {
    this.s = settings;
    this.link = settings.client
      ? borrowedLink(settings.client)
      : ownLink(settings.url as string, settings.timeoutMs);
    this.base = baseKey(settings.prefix, settings.name);
    this.ledger = new Ledger(settings, now());
    this.reserve = Math.round(settings.minPerSecond * (settings.ttlMs / 1000) * UNIT);
    this.fingerprint = settingsFingerprint(settings);
    this.telemetry = fleetTelemetry(settings.name, () => this.stats(), settings.meterProvider);
  }

  get [BUDGET_PORT](): BudgetPort {
    return this;
  }

  /**
   * The first sync and, with warm start, the fleet's histograms, all within one `timeoutMs`;
   * then the loops. A first sync still unanswered then goes on in the background (its reply is
   * taken when it comes) while the instance starts in local mode.
   */
  async start(): Promise<void> {
    const deadline = now() + this.s.timeoutMs;
    const left = () => deadline - now();
    await within(this.link.ready, left()).catch(() => {});
    const first = this.sync();
    await Promise.all([
      within(first, left()).catch(() => {}),
      this.s.warmStart ? this.loadFleet(left()) : undefined,
    ]);
    if (this.syncs > 0 && this.warmStartError !== undefined && !this.s.onModeChange) {
      // Redis answers, yet the histograms could not be read: say so (an unreachable Redis has its own warning).
      process.emitWarning(
        `tailcut fleet budget "${this.s.name}": could not read the fleet's latency histograms (${this.warmStartError}); routes start cold`,
        { code: 'TAILCUT_FLEET_WARM_START' },
      );
    }
    if (this.syncs === 0)
      this.goLocal(
        this.localReason ?? `Redis unreachable (no answer within ${this.s.timeoutMs} ms)`,
      );
    this.scheduleSync();
    if (this.s.warmStart) this.schedulePublish();
  }

  // ---- the engine's side (synchronous, never waits on Redis) ----

  deposit(cost = 1): void {
    this.ledger.deposit(cost, now());
    this.local?.deposit(cost);
  }

  acquire(cost = 1): HedgeGrant {
    if (this.inFlight >= this.s.maxConcurrentHedges) {
      this.deniedConcurrency++;
      return 'denied_concurrency';
    }
    const amount = Math.round(cost * UNIT);
    const t = now();
    const ok = this.local ? this.local.acquire(cost) === 'granted' : this.ledger.affords(amount, t);
    if (!ok) {
      this.deniedBudget++;
      return 'denied_budget';
    }
    this.ledger.spend(amount, t);
    this.inFlight++;
    this.granted++;
    return 'granted';
  }

  release(): void {
    if (this.inFlight > 0) this.inFlight--;
    this.local?.release();
  }

  refund(cost = 1): void {
    this.ledger.spend(-Math.round(cost * UNIT), now());
    this.local?.refund(cost);
    if (this.granted > 0) this.granted--;
  }

  penalize(): void {
    this.ledger.penalize();
    this.local?.penalize();
    this.penalties++;
  }

  affordableShare(): number {
    if (this.local) return this.local.affordableShare();
    const v = this.ledger.view;
    if (v === undefined) return Number.POSITIVE_INFINITY;
    const supply = v.deposits + this.reserve - v.penalties;
    return aimedShare(supply, v.calls, supply - v.hedges);
  }

  get weighted(): boolean {
    return this.s.cost !== undefined;
  }

  costOf(request: KeyRequest): number {
    if (this.s.cost === undefined) return 1;
    try {
      const c = this.s.cost(request);
      return Number.isFinite(c) && c >= 0 ? c : 1;
    } catch {
      return 1;
    }
  }

  attach(routes: readonly RouteTap[]): void {
    for (const route of routes) {
      const h = this.fleet?.get(route.name);
      if (h === undefined || h.totalCount === 0) continue;
      route.seed(seedSamples(h));
      this.warmRoutes++;
    }
  }

  observe(route: string, ms: number): void {
    if (this.s.warmStart && !this.stopping) this.histograms.record(route, ms);
  }

  stats(): FleetBudgetStats {
    const v = this.ledger.view;
    const local = this.local?.stats();
    return {
      tokens: local ? local.tokens : Math.max(0, Math.floor(this.ledger.available() / UNIT)),
      inFlightHedges: this.inFlight,
      granted: this.granted,
      deniedBudget: this.deniedBudget,
      deniedConcurrency: this.deniedConcurrency,
      penalties: this.penalties,
      mode: this.mode,
      localReason: this.localReason,
      instances: v?.instances ?? 1,
      fleetCalls: (v?.calls ?? 0) / UNIT,
      fleetHedges: (v?.hedges ?? 0) / UNIT,
      share: this.ledger.share(),
      syncs: this.syncs,
      syncFailures: this.syncFailures,
      warmRoutes: this.warmRoutes,
      warmStartError: this.warmStartError,
    };
  }

  close(): Promise<void> {
    if (this.closing === undefined) {
      this.stopping = true;
      this.closing = this.shutdown();
    }
    return this.closing;
  }

  // ---- the background side ----

  private scheduleSync(): void {
    if (this.stopping) return;
    const jitter = this.s.syncMs * (0.9 + 0.2 * Math.random());
    this.syncTimer = setTimeout(() => {
      this.scheduleSync();
      void this.sync();
    }, jitter);
    this.syncTimer.unref();
  }

  private schedulePublish(): void {
    if (this.stopping) return;
    this.publishTimer = setTimeout(() => {
      this.schedulePublish();
      void this.publish();
    }, this.s.publishMs);
    this.publishTimer.unref();
  }

  /**
   * One sync (at most one in flight). A sync unanswered after `timeoutMs` puts the instance in
   * local mode meanwhile, but it is awaited (and its reply taken) for up to a ttl before it is
   * given up and its deltas resent: a Redis that hangs is not sent a sync every `syncMs` to pile
   * up, and a sync that answers late still brings its lease. Resending is safe either way (the
   * script adds a part only if the sync that first sent it never ran). Start and `close()` wait
   * for it at most `timeoutMs` and leave it running.
   */
  private async sync(): Promise<void> {
    const t = now();
    const inflight = this.inflight;
    if (inflight !== undefined) {
      if (t - inflight.at < this.s.timeoutMs) return;
      this.goLocal(`Redis unreachable (no answer within ${this.s.timeoutMs} ms)`);
      if (t - inflight.at < this.s.ttlMs) return;
      // Given up (a client that never answers must not stop the syncs): its parts are resent.
      this.inflight = undefined;
      this.ledger.requeue(inflight.parts);
    }
    const { parts, giveBack } = this.ledger.send(t);
    let settled = () => {};
    const mine = { at: t, parts, done: new Promise<void>((resolve) => (settled = resolve)) };
    this.inflight = mine;
    const args = [
      this.base,
      this.instance,
      String(this.s.ttlMs / SLICES),
      String(SLICES),
      String(this.reserve),
      String(giveBack?.slice ?? -1),
      String(giveBack?.amount ?? 0),
      String(giveBack?.seq ?? 0),
      String(this.ledger.ownCalls(t)),
      this.stopping ? '0' : '1',
      this.fingerprint,
    ];
    for (const { seq, deltas: d } of parts) {
      args.push(
        String(seq),
        String(d.deposits),
        String(d.calls),
        String(d.hedges),
        String(d.penalties),
      );
    }
    try {
      const reply = await within(
        this.link.script(SYNC_SCRIPT, args),
        Math.max(this.s.timeoutMs, this.s.ttlMs),
        true,
      );
      if (this.inflight !== mine) return;
      this.ledger.accept(parseView(reply, this.fingerprint));
      this.syncs++;
      if (!this.stopping) this.goShared();
    } catch (error) {
      if (this.inflight !== mine) return;
      this.ledger.requeue(parts);
      this.syncFailures++;
      if (this.stopping) return;
      if (error instanceof SettingsMismatch) {
        // Outside the fleet's budget: one instance's part of its own floor, as if it had joined.
        this.goLocal(error.message, 1 / (error.instances + 1));
      } else {
        this.goLocal(`Redis unreachable (${String((error as Error)?.message ?? error)})`);
      }
    } finally {
      if (this.inflight === mine) this.inflight = undefined;
      settled();
    }
  }

  /** Switches to a local budget with `share` of the floor (the last known share by default). */
  private goLocal(reason: string, share = this.ledger.share()): void {
    this.localReason = reason;
    if (this.local) return;
    this.local = createBudget({
      ratio: this.s.ratio,
      minPerSecond: this.s.minPerSecond * share,
      ttlMs: this.s.ttlMs,
      maxConcurrentHedges: 1_000_000,
    })[BUDGET_PORT];
    this.switched('local', reason);
  }

  private goShared(): void {
    this.localReason = undefined;
    if (!this.local) return;
    this.local = undefined;
    this.switched('shared', 'Redis answered again');
  }

  private switched(mode: FleetMode, reason: string): void {
    this.mode = mode;
    this.telemetry.modeChanged(mode);
    if (this.s.onModeChange) {
      try {
        this.s.onModeChange(mode, reason);
      } catch {
        // a failing callback must not stop the budget
      }
    } else if (mode === 'local') {
      process.emitWarning(
        `tailcut fleet budget "${this.s.name}": ${reason}; deciding locally on this instance's share of the floor until it can share the fleet's budget again`,
        { code: 'TAILCUT_FLEET_LOCAL' },
      );
    }
  }

  /**
   * Loads and merges the fleet's recent histograms (within `ms`). On failure the routes start
   * cold and the error is kept in `stats().warmStartError`.
   */
  private async loadFleet(ms: number): Promise<void> {
    try {
      const values = await within(
        this.link.script(READ_SCRIPT, [
          `${this.base}:hx`,
          String(3 * this.s.publishMs),
          String(MAX_READ_KEYS),
        ]),
        ms,
      );
      this.fleet = mergeSnapshots(Array.isArray(values) ? values : []);
    } catch (error) {
      this.fleet = undefined;
      this.warmStartError = String((error as Error)?.message ?? error);
    }
  }

  /** Publishes this instance's histograms (one round trip, within `ms`); a failure only skips this interval. */
  private async publish(ms = this.s.timeoutMs): Promise<void> {
    const snapshots = this.histograms.rotate();
    if (snapshots.size === 0) return;
    const args = [`${this.base}:hx`, String(3 * this.s.publishMs)];
    for (const [route, base64] of snapshots) {
      let n = this.routeNumbers.get(route);
      if (n === undefined) {
        n = this.routeNumbers.size;
        this.routeNumbers.set(route, n);
      }
      args.push(histogramKey(this.base, this.instance, n), encodeSnapshot(route, base64));
    }
    try {
      await within(this.link.script(PUBLISH_SCRIPT, args), ms);
    } catch {
      // the next interval publishes again
    }
  }

  /**
   * Publishes, gives back the lease (a sync that takes none) and closes the connection the budget
   * opened, all within one `timeoutMs`: a Redis that hangs cannot hold `close()` longer. The own
   * connection is destroyed at the deadline; a client passed in is left as it is (a sync or
   * publish still waiting on it may complete later, harmlessly).
   */
  private async shutdown(): Promise<void> {
    const deadline = now() + this.s.timeoutMs;
    const left = () => deadline - now();
    clearTimeout(this.syncTimer);
    clearTimeout(this.publishTimer);
    const returned = (async () => {
      if (this.inflight) await within(this.inflight.done, left()).catch(() => {});
      if (this.mode === 'shared' && left() > 0) await within(this.sync(), left()).catch(() => {});
    })();
    await Promise.all([this.s.warmStart ? this.publish(left()) : undefined, returned]);
    this.histograms.clear();
    for (const h of this.fleet?.values() ?? []) h.destroy();
    this.fleet = undefined;
    this.telemetry.close();
    await this.link.close(Math.max(0, left()));
    if (!this.local) this.goLocalQuietly();
  }

  /** After close: a local budget with the last share, without a warning (the user closed it). */
  private goLocalQuietly(): void {
    this.local = createBudget({
      ratio: this.s.ratio,
      minPerSecond: this.s.minPerSecond * this.ledger.share(),
      ttlMs: this.s.ttlMs,
      maxConcurrentHedges: 1_000_000,
    })[BUDGET_PORT];
    this.mode = 'local';
    this.localReason = 'closed';
  }
}

/**
 * Creates a hedge budget shared by every instance of a fleet through Redis: over any `ttlMs`, the
 * fleet's hedges stay within `ratio` × the fleet's calls + `minPerSecond` × ttl (one floor for the
 * whole fleet), within one sync interval's hedges. Each instance decides locally against a lease
 * it renews every `syncMs` in one round trip; calls never wait on Redis. When Redis is slow or
 * down the instance falls back to a local budget with its last known share of the floor, and
 * rejoins when Redis answers. Resolves after the first sync and the warm-start read, within
 * `timeoutMs` in all (an unreachable Redis does not make it reject: the budget starts in local
 * mode, at once if the connection is refused). Instances of one `name` must agree on `ttlMs`,
 * `ratio` and `minPerSecond`: one that differs from the fleet stays in local mode, saying why.
 * Throws a `TailcutError` (`TAILCUT_INVALID_OPTION`) naming the option and value when an option is invalid.
 */
export async function createFleetBudget(options: FleetBudgetOptions): Promise<FleetBudget> {
  const budget = new RedisFleetBudget(validateFleetOptions(options));
  await budget.start();
  return budget;
}
