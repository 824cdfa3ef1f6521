import * as undici from 'undici';

/** How to hand a winning response to the caller. */
export interface HandOver {
  /** First body chunk already read (commit on first byte). */
  head?: Uint8Array | undefined;
  /** Reader of the body, when one was taken to read `head`. */
  reader?: ReadableStreamDefaultReader<Uint8Array> | undefined;
  /** The caller's signal: aborting it while the body is read aborts the winner. */
  signal?: AbortSignal | undefined;
  /** Aborts the winning attempt. */
  abort(reason: unknown): void;
}

/**
 * Returns the response the caller gets. When nothing has to be attached it is the winner's own
 * response; else a response over the same headers whose body replays the chunk read at commit
 * and keeps one listener on the caller's signal until the body ends, errors or is cancelled.
 */
export function handOver(res: undici.Response, how: HandOver): undici.Response {
  const signal = how.signal;
  if (res.body === null || (how.reader === undefined && signal === undefined)) return res;
  const reader = how.reader ?? res.body.getReader();
  const head = how.head;
  const onAbort = () => how.abort(signal?.reason);
  const cleanup = () => signal?.removeEventListener('abort', onAbort);
  if (signal !== undefined) {
    if (signal.aborted) how.abort(signal.reason);
    else signal.addEventListener('abort', onAbort, { once: true });
  }
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        if (head !== undefined) controller.enqueue(head);
      },
      async pull(controller) {
        try {
          const r = await reader.read();
          if (r.done) {
            cleanup();
            controller.close();
          } else {
            controller.enqueue(r.value);
          }
        } catch (err) {
          cleanup();
          controller.error(err);
        }
      },
      cancel(reason) {
        cleanup();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const out = new undici.Response(body, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
  Object.defineProperties(out, {
    url: { value: res.url, enumerable: true },
    redirected: { value: res.redirected, enumerable: true },
  });
  return out;
}
