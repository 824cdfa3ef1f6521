import type { Clock, TimerHandle } from '../clock.js';
import { TailcutError } from '../errors.js';
import type { RouteState } from './route-state.js';

/** Where a watch reports the body's timing, ms. */
export interface StreamSink {
  firstByte(ms: number): void;
  chunkGap(ms: number): void;
}

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
    /** Clock reading when the call started. */
    private readonly callStartedAt: number,
    private readonly sink: StreamSink,
    /** Called when the body stalls past the route's chunkTimeoutMs. */
    private readonly onStall: (error: TailcutError) => void,
    /** True while the caller holds the body back (its pauses are not the server's stalls). */
    private readonly callerPaused: () => boolean,
  ) {
    // The answer's headers reached the caller: the chunk clock starts.
    this.last = this.clock.now();
    const timeout = this.route.settings.chunkTimeoutMs;
    if (timeout !== undefined) this.arm(timeout);
  }

  chunk(): void {
    const now = this.clock.now();
    if (this.count === 0) this.sink.firstByte(now - this.callStartedAt);
    else this.sink.chunkGap(now - this.last);
    this.count++;
    this.last = now;
  }

  /** The body ended (or failed): stops the timer; returns the chunks delivered. */
  end(): number {
    this.done = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    return this.count;
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
