import type { Dispatcher } from 'undici';

/** Errors that mean the dispatcher was closed: warming it stops. */
const CLOSED = new Set(['UND_ERR_CLOSED', 'UND_ERR_DESTROYED']);

/**
 * Keeps a connection to each replica open, so that a hedge does not pay TCP and TLS setup
 * (often longer than the hedge delay itself): an `OPTIONS /` to every replica origin as soon as the
 * interceptor is composed onto a dispatcher, then every `intervalMs`, below tailcut (no route,
 * no budget, no telemetry), without the caller's or a replica's headers. The answer is
 * discarded; a failed ping is tried again at the next tick. The timer does not keep the process
 * alive, and stops with `stop()` or once the dispatcher is closed. (`OPTIONS`, not `HEAD`: Node's
 * own HTTP server closes the connection after a HEAD whose length it does not know.)
 */
export class ConnectionWarmer {
  private readonly timers = new Set<NodeJS.Timeout>();

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
      const done = (err?: Error) => {
        pending.delete(origin);
        if (err !== undefined && CLOSED.has((err as { code?: string }).code ?? '')) stop();
      };
      try {
        dispatch(
          { origin, path: '/', method: 'OPTIONS', headers: {}, body: null },
          pingHandler(done),
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

  /** Stops every warming timer. */
  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers.clear();
  }
}

/** A dispatch handler that discards the answer and reports the end. */
function pingHandler(done: (err?: Error) => void): Dispatcher.DispatchHandler {
  return {
    onRequestStart() {},
    onResponseStart() {},
    onResponseData() {},
    onResponseEnd: () => done(),
    onResponseError: (_controller, err) => done(err),
  };
}
