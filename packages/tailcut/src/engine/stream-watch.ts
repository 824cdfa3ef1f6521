import type { Clock, TimerHandle } from '../clock.js';
import { TailcutError } from '../errors.js';
import type { RouteState } from './route-state.js';

/** Where a watch reports the body's timing, ms. */
export interface StreamSink {
  firstByte(ms: number): void;
  chunkGap(ms: number): void;
  firstToken(ms: number): void;
  tokenGap(ms: number): void;
}

/**
 * Watches the body of a call's answer as the caller gets it: time to first byte and the gaps
 * between chunks (for telemetry), and the route's `chunkTimeoutMs`, with one timer re-armed
 * lazily (never one per chunk), cleared when the body ends.
 */
export class StreamWatch {
  /** When the last chunk reached the caller. */
  private last = 0;
  /** When the last output event reached the caller (first-token routes). */
  private lastToken = 0;
  /** When the body last made progress, as `chunkTimeoutMs` counts it. */
  private progress = 0;
  private chunks = 0;
  private tokenCount = 0;
  private timer: TimerHandle | undefined;
  private done = false;
  /** On first-token routes only output events are progress: pings do not hold a stall open. */
  private readonly tokensAreProgress: boolean;

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
    this.progress = this.last;
    this.tokensAreProgress = route.settings.commitOn === 'first-token';
    const timeout = this.route.settings.chunkTimeoutMs;
    if (timeout !== undefined) this.arm(timeout);
  }

  chunk(): void {
    const now = this.clock.now();
    if (this.chunks === 0) this.sink.firstByte(now - this.callStartedAt);
    else this.sink.chunkGap(now - this.last);
    this.chunks++;
    this.last = now;
    if (!this.tokensAreProgress) this.progress = now;
  }

  /** `count` output events reached the caller with the last chunk. */
  tokens(count: number): void {
    const now = this.clock.now();
    if (this.tokenCount === 0) this.sink.firstToken(now - this.callStartedAt);
    else this.sink.tokenGap(now - this.lastToken);
    this.tokenCount += count;
    this.lastToken = now;
    this.progress = now;
  }

  /** The body ended (or failed): stops the timer; returns what the body carried. */
  end(): { chunks: number; tokens: number } {
    this.done = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    return { chunks: this.chunks, tokens: this.tokenCount };
  }

  private arm(ms: number): void {
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      if (this.done) return;
      const timeout = this.route.settings.chunkTimeoutMs as number;
      if (this.callerPaused()) this.progress = this.clock.now();
      const idle = this.clock.now() - this.progress;
      if (idle < timeout) {
        this.arm(timeout - idle);
        return;
      }
      const what = this.tokensAreProgress ? 'output event' : 'body chunk';
      this.onStall(
        new TailcutError(
          'TAILCUT_CHUNK_TIMEOUT',
          `tailcut: no ${what} for ${Math.round(idle)} ms on route "${this.route.settings.name}" (chunkTimeoutMs ${timeout})`,
        ),
      );
    }, ms);
  }
}
