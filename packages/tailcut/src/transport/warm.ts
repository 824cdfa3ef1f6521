import type { Dispatcher } from 'undici';

/** Longest a ping may wait for its answer: a replica that accepts and never answers holds no close. */
const PING_TIMEOUT_MS = 10_000;

/** Errors that mean the dispatcher was closed: warming it stops. */
const CLOSED = new Set(['UND_ERR_CLOSED', 'UND_ERR_DESTROYED']);

/**
 * Keeps a connection to each replica open, so that a hedge does not pay TCP and TLS setup
 * (often longer than the hedge delay itself): an `OPTIONS /` to every replica origin as soon as the
 * interceptor is composed onto a dispatcher, then every `intervalMs`, below tailcut (no route,
 * no budget, no telemetry), without the caller's or a replica's headers. The answer is
 * discarded; a failed ping is tried again at the next tick. The timer does not keep the process
 * alive, and stops with `stop()` (which aborts the pings still out) or once the dispatcher is
 * closed. A ping waits at most the interval (10 s at most) for its answer, so a replica that
 * accepts connections and never answers cannot hold the dispatcher's `close()` for long.
 * (`OPTIONS`, not `HEAD`: Node's own HTTP server closes the connection after a HEAD whose length
 * it does not know.)
 */
export class ConnectionWarmer {
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The pings still out, to abort on `stop()`. */
  private readonly out = new Set<Dispatcher.DispatchController>();

  constructor(
    private readonly origins: readonly string[],
    private readonly intervalMs: number,
  ) {}

  /** Starts warming the replicas' connections of the dispatcher behind `dispatch`. */
  start(dispatch: Dispatcher.Dispatch): void {
    if (this.origins.length === 0) return;
    const pending = new Set<string>();
    let timer: NodeJS.Timeout | undefined;
    const stop = () => {
      if (timer !== undefined) clearInterval(timer);
      if (timer !== undefined) this.timers.delete(timer);
      timer = undefined;
    };
    const ping = (origin: string) => {
      if (pending.has(origin)) return; // the last ping is still out: its connection is busy anyway
      pending.add(origin);
      let controller: Dispatcher.DispatchController | undefined;
      const done = (err?: Error) => {
        pending.delete(origin);
        if (controller !== undefined) this.out.delete(controller);
        if (err !== undefined && CLOSED.has((err as { code?: string }).code ?? '')) stop();
      };
      try {
        const timeout = Math.min(this.intervalMs, PING_TIMEOUT_MS);
        dispatch(
          {
            origin,
            path: '/',
            method: 'OPTIONS',
            headers: {},
            body: null,
            headersTimeout: timeout,
            bodyTimeout: timeout,
          },
          pingHandler((c) => {
            controller = c;
            this.out.add(c);
          }, done),
        );
      } catch (err) {
        done(err as Error);
      }
    };
    const tick = () => {
      for (const origin of this.origins) ping(origin);
    };
    timer = setInterval(tick, this.intervalMs);
    timer.unref();
    this.timers.add(timer);
    tick();
  }

  /** Stops every warming timer and aborts the pings still out. */
  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers.clear();
    for (const c of this.out) c.abort(new Error('tailcut: connection warming stopped'));
    this.out.clear();
  }
}

/** A dispatch handler that discards the answer and reports its controller and its end. */
function pingHandler(
  started: (controller: Dispatcher.DispatchController) => void,
  done: (err?: Error) => void,
): Dispatcher.DispatchHandler {
  return {
    onRequestStart: (controller) => started(controller),
    onResponseStart() {},
    onResponseData() {},
    onResponseEnd: () => done(),
    onResponseError: (_controller, err) => done(err),
  };
}
