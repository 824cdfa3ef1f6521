import type { Clock, TimerHandle } from '../clock.js';
import type { RouteState } from '../engine/route-state.js';
import { TailcutError } from '../errors.js';
import type { Telemetry } from '../telemetry/telemetry.js';

/**
 * Watches the body of a call's answer as the caller gets it: time to first byte and the gaps
 * between chunks (for telemetry), and the route's `chunkTimeoutMs`, with one timer re-armed
 * lazily (never one per chunk), cleared when the body ends.
 */
export class StreamWatch {
  private last = 0;
  private count = 0;
  private timer: TimerHandle | undefined;
  private done = false;

  constructor(
    private readonly route: RouteState,
    private readonly clock: Clock,
    private readonly telemetry: Telemetry,
    /** Clock reading when the call started. */
    private readonly callStartedAt: number,
    /** Called when the body stalls past the route's chunkTimeoutMs. */
    private readonly onStall: (error: TailcutError) => void,
    /** True while the caller holds the body back (its pauses are not the server's stalls). */
    private readonly callerPaused: () => boolean,
  ) {}

  /** The answer's headers reached the caller: the chunk clock starts. */
  start(): void {
    this.last = this.clock.now();
    const timeout = this.route.settings.chunkTimeoutMs;
    if (timeout !== undefined) this.arm(timeout);
  }

  chunk(): void {
    const now = this.clock.now();
    if (this.count === 0) this.telemetry.recordFirstByte(this.route, now - this.callStartedAt);
    else this.telemetry.recordChunkGap(this.route, now - this.last);
    this.count++;
    this.last = now;
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.count > 0) this.telemetry.recordChunks(this.route, this.count);
  }

  private arm(ms: number): void {
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.done) return;
      const timeout = this.route.settings.chunkTimeoutMs as number;
      if (this.callerPaused()) this.last = this.clock.now();
      const idle = this.clock.now() - this.last;
      if (idle < timeout) {
        this.arm(timeout - idle);
        return;
      }
      this.onStall(
        new TailcutError(
          'TAILCUT_CHUNK_TIMEOUT',
          `tailcut: no body chunk for ${Math.round(idle)} ms on route "${this.route.settings.name}" (chunkTimeoutMs ${timeout})`,
        ),
      );
    }, ms);
  }
}
