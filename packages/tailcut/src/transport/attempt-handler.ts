import type { Dispatcher } from 'undici';
import { verdict } from '../engine/policy.js';
import type { AttemptContext, AttemptReport } from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { TokenWatch } from '../stream/token-watch.js';
import type { CallController } from './call-controller.js';

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Record<string, string | string[] | undefined>;

const NO_HEADERS: Headers = Object.freeze({});

/** What the winner tells its call as the caller gets the body. */
export interface Delivery {
  /** False when nothing needs the output events after the first: framing stops then. */
  readonly countsTokens: boolean;
  chunk(): void;
  end(error: unknown): void;
  /** Output events (first-token routes) that reached tailcut in the chunk just delivered. */
  tokens(count: number): void;
}

/** Most bytes an attempt holds while waiting for its first output event; past it, it commits. */
const HOLD_LIMIT_BYTES = 64 * 1024;

/**
 * The handler of one attempt. It reports at the commit point (response start, first body
 * chunk, or first output event of a streamed answer); the race decides synchronously, so a winner is attached to the caller's handler at
 * once and its body flows straight through. A result the race keeps for later (the last
 * failure, returned if nothing better comes) is held, its socket paused, until it is attached or
 * cancelled.
 */
export class AttemptHandler implements Handler {
  status = 0;
  private state: 'waiting' | 'held' | 'attached' | 'cancelled' = 'waiting';
  private controller: Controller | undefined;
  private pausedHeld = false;
  private cancelReason: unknown;
  private headers: Headers = NO_HEADERS;
  private statusMessage: string | undefined;
  /** Chunks held until the caller takes them (made when first needed). */
  private chunks: Buffer[] | undefined;
  /** How the response ended, while the caller has not been told: trailers, or an error. */
  private endTrailers: Headers | undefined;
  private endError: Error | undefined;
  // Fields rather than object literals: see the note on per-call objects in engine/race.ts.
  private callerHandler: Handler | undefined;
  private callerController: CallController | undefined;
  /** Told of each chunk the caller gets, and of the end (undefined) or error it gets. */
  private delivery: Delivery | undefined;
  /** Frames a streamed answer on a first-token route. */
  private watch: TokenWatch | undefined;
  private heldBytes = 0;
  /** Output events seen and not yet reported to the delivery. */
  private pendingTokens = 0;
  /** True when a streamed answer failed before its first output (an error event, or no output). */
  streamFailed = false;
  /**
   * True for an attempt to a replica with a request shape or credentials of its own, other than
   * the origin the request was sent to: a redirect it answers points into that replica's own
   * URL space, and whatever follows it above tailcut would resolve it against the caller's URL
   * and send the caller's headers there. Its Location is dropped: the 3xx reaches the caller as
   * it is.
   */
  dropLocation = false;
  /**
   * The route's replicas' origins, when it has several: a redirect into another of them would
   * come back into the route as a new call and be balanced to any replica (maybe the one that
   * redirected), never reaching the replica it names. Its Location is dropped too.
   */
  siblings: readonly string[] | undefined;
  /** The attempt's own origin, against which a relative Location resolves. */
  siblingBase = '';

  constructor(
    /** The race's side of the attempt, until the caller has its answer. */
    private report: AttemptReport<AttemptHandler> | undefined,
    private readonly route: RouteState,
    private readonly kind: AttemptContext['kind'],
    /** True for a HEAD request: its answer has no body, so no output to wait for. */
    private readonly headOnly: boolean,
  ) {}

  /** True when `location` resolves to another replica of the route than this attempt's. */
  private intoSibling(location: string): boolean {
    if (this.siblings === undefined) return false;
    try {
      const origin = new URL(location, this.siblingBase).origin;
      return origin !== this.siblingBase && this.siblings.includes(origin);
    } catch {
      return false;
    }
  }

  /** The answer's Retry-After header, if any. */
  get retryAfter(): string | string[] | undefined {
    return this.headers['retry-after'];
  }

  onRequestStart(controller: Controller): void {
    this.controller = controller;
    if (this.state === 'cancelled') controller.abort(this.cancelReason as Error);
  }

  onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: Headers,
    statusMessage?: string,
  ): void {
    if (statusCode < 200 || this.state === 'cancelled') return; // 1xx: not the answer
    this.controller = controller;
    this.status = statusCode;
    this.headers = headers;
    const location = headers.location;
    if (
      location !== undefined &&
      statusCode < 400 &&
      (this.dropLocation || (statusCode >= 300 && this.intoSibling(String(location))))
    ) {
      const { location: _, ...rest } = headers;
      this.headers = rest;
    }
    this.statusMessage = statusMessage;
    // Commit on the headers, unless the route commits on the first byte or the first output
    // event of an acceptable answer.
    const { commitOn, classify } = this.route.settings;
    if (commitOn === 'headers' || verdict(this.route, this, this.kind) !== 'accept') {
      this.commit();
      return;
    }
    // An answer with no body (HEAD, 204, 304) has no output to wait for: it commits whole.
    const bodyless = this.headOnly || statusCode === 204 || statusCode === 304;
    if (commitOn === 'first-token' && classify !== undefined && !bodyless) {
      const type = headers['content-type'];
      this.watch = TokenWatch.for(Array.isArray(type) ? type[0] : type, classify);
    }
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.state === 'cancelled') return;
    const seen = this.watch?.feed(chunk);
    const handler = this.callerHandler;
    if (handler !== undefined && (this.chunks === undefined || this.chunks.length === 0)) {
      this.delivery?.chunk();
      handler.onResponseData?.(this.callerController as CallController, chunk);
      if (seen !== undefined && seen.tokens > 0) this.delivery?.tokens(seen.tokens);
      return;
    }
    this.chunks ??= [];
    this.chunks.push(chunk);
    this.heldBytes += chunk.byteLength;
    if (seen !== undefined) this.pendingTokens += seen.tokens;
    if (this.state === 'waiting') {
      if (seen === undefined || seen.tokens > 0 || this.heldBytes > HOLD_LIMIT_BYTES) {
        this.commit();
      } else if (seen.error) {
        this.streamFailed = true;
        this.commit();
      }
    }
    if (this.state === 'held' && !this.pausedHeld) {
      this.pausedHeld = true;
      controller.pause();
    }
  }

  onResponseEnd(_controller: Controller, trailers: Headers): void {
    this.finishWith(trailers, undefined);
  }

  onResponseError(_controller: Controller, error: Error): void {
    if (this.state === 'waiting') {
      this.state = 'cancelled';
      this.report?.fail(error);
      return;
    }
    this.finishWith(undefined, error);
  }

  /** Hands the response, from its start, to the caller's handler. */
  attach(handler: Handler, controller: CallController, delivery: Delivery): void {
    this.delivery = delivery;
    this.state = 'attached';
    this.callerHandler = handler;
    this.callerController = controller;
    if (this.controller !== undefined) controller.attach(this.controller);
    controller.onResume = () => this.flush();
    handler.onResponseStart?.(controller, this.status, this.headers, this.statusMessage);
    this.headers = NO_HEADERS; // the caller has them; a stream may run for minutes
    if (this.pendingTokens > 0) delivery.tokens(this.pendingTokens);
    this.pendingTokens = 0;
    // Past the commit, framing the stream (SSE parsing, a JSON parse per event) only feeds token
    // telemetry and an output-event chunk timeout: without either, the bytes just flow.
    if (!delivery.countsTokens) this.watch = undefined;
    this.flush();
  }

  /** Aborts the attempt (lost, not needed, or the caller aborted). */
  cancel(reason: unknown): void {
    if (this.state === 'cancelled') return;
    this.state = 'cancelled';
    this.cancelReason = reason;
    this.chunks = undefined;
    this.controller?.abort(reason as Error);
  }

  private commit(): void {
    this.state = 'held';
    this.report?.commit(this);
  }

  private finishWith(trailers: Headers | undefined, error: Error | undefined): void {
    if (this.state === 'cancelled') return;
    if (error === undefined) this.endTrailers = trailers ?? NO_HEADERS;
    else this.endError = error;
    // An empty body ends the response: that is its commit point too. A stream that ends with
    // no output failed.
    if (this.state === 'waiting') {
      if (this.watch !== undefined) this.streamFailed = true;
      this.commit();
    } else if (this.state === 'attached') this.flush();
  }

  /**
   * The caller was told of the end (and its handler returned): lets go of the caller and the
   * call, so that undici's hold on this handler (and the caller's on its controller) keeps
   * nothing else of the call reachable.
   */
  private detach(controller: CallController): void {
    controller.release();
    this.callerHandler = undefined;
    this.callerController = undefined;
    this.delivery = undefined;
    this.report = undefined;
  }

  /** Delivers held chunks and the end to the caller, as far as the caller is not paused. */
  private flush(): void {
    const handler = this.callerHandler;
    const controller = this.callerController;
    if (handler === undefined || controller === undefined) return;
    const chunks = this.chunks;
    while (chunks !== undefined && chunks.length > 0) {
      if (controller.paused || controller.aborted) return;
      this.delivery?.chunk();
      handler.onResponseData?.(controller, chunks.shift() as Buffer);
    }
    const trailers = this.endTrailers;
    const error = this.endError;
    if (trailers !== undefined || error !== undefined) {
      // The caller stays attached: if its onResponseEnd throws (undici's retry handler does,
      // to ask for a retry), undici reports that error here and it is forwarded too.
      this.endTrailers = undefined;
      this.endError = undefined;
      this.delivery?.end(error);
      if (error === undefined) handler.onResponseEnd?.(controller, trailers as Headers);
      else handler.onResponseError?.(controller, error);
      this.detach(controller);
      return;
    }
    controller.onResume = undefined;
    if (this.pausedHeld && !controller.paused) {
      this.pausedHeld = false;
      this.controller?.resume();
    }
  }
}
