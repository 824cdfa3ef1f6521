import type { AttemptContext, AttemptOutcome, HedgeOutcome } from './race.js';
import type { RouteState } from './route-state.js';

/** What a call's answer carried to the caller. */
export interface BodyCounts {
  chunks: number;
  /** Output events, on first-token routes. */
  tokens: number;
}

/** How an attempt or a call ended. */
export interface Ending {
  status?: number | undefined;
  error?: unknown;
}

/**
 * Observes the engine (telemetry): one per client. The engine calls it on its own clock and
 * passes durations in; nothing the listener does feeds back into the engine.
 */
export interface EngineListener {
  /** A routed call started; returns the observer of that call. */
  callStarted(route: RouteState, method: string): CallListener;
}

/** Observes one call. */
export interface CallListener {
  /**
   * An attempt to `origin` starts. Returns the trace context the attempt is sent in (the
   * transport injects it into the request), or undefined when nothing is traced.
   */
  attemptStarted(ctx: AttemptContext, origin: string): unknown;
  /** An attempt ended after `seconds`. */
  attemptEnded(ctx: AttemptContext, outcome: AttemptOutcome, seconds: number, ending: Ending): void;
  /** A hedge was sent, won, or not sent (and why). */
  hedge(outcome: HedgeOutcome): void;
  /** The first body chunk reached the caller, `seconds` after the call started. */
  firstByte(seconds: number): void;
  /** A body chunk reached the caller `seconds` after the previous one. */
  chunkGap(seconds: number): void;
  /** The first output event (first-token routes) reached the caller, `seconds` after the call started. */
  firstToken(seconds: number): void;
  /** A chunk with output events reached the caller `seconds` after the previous one. */
  tokenGap(seconds: number): void;
  /** The call ended after `seconds`: `slow` when over its route's SLO; what its body carried. */
  ended(
    winner: AttemptContext | undefined,
    seconds: number,
    ending: Ending,
    slow: boolean,
    counts: BodyCounts,
  ): void;
}

/** A call listener that observes nothing: one shared object, nothing made per call. */
export const SILENT: CallListener = {
  attemptStarted: () => undefined,
  attemptEnded() {},
  hedge() {},
  firstByte() {},
  chunkGap() {},
  firstToken() {},
  tokenGap() {},
  ended() {},
};
