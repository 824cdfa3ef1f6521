import * as undici from 'undici';

/** Removes listeners of responses that were dropped unread, when they are collected. */
const unread = new FinalizationRegistry<() => void>((cleanup) => cleanup());

/** How a call listens to the caller's signal: one listener, removed when the call is done. */
export interface SignalLink {
  /** The signal to give undici.fetch for this call alone. */
  signal: AbortSignal;
  /** Hands the response to the caller: the listener stays until its body ends. */
  finish(res: undici.Response): undici.Response;
  /** Removes the listener (the call failed before a response). */
  release(): void;
}

/** The calls currently linked to one caller signal, behind a single listener. */
interface Links {
  controllers: Set<AbortController>;
  onAbort: () => void;
}

const linked = new WeakMap<AbortSignal, Links>();

/**
 * Links a caller's signal to one call. undici.fetch keeps its listener on the caller's signal
 * until the request is garbage-collected, so a long-lived signal shared by many calls collects
 * thousands of listeners (and MaxListenersExceededWarning). Here a caller's signal carries one
 * listener however many calls are in flight with it, and a call leaves it when it settles, or
 * when its body ends, errors or is cancelled; an unread body leaves when it is collected. The
 * listener goes when the last call leaves.
 */
export function linkSignal(caller: AbortSignal): SignalLink {
  const controller = new AbortController();
  let links = linked.get(caller);
  if (links === undefined) {
    const entry: Links = {
      controllers: new Set(),
      onAbort: () => {
        linked.delete(caller);
        for (const c of entry.controllers) c.abort(caller.reason);
        entry.controllers.clear();
      },
    };
    caller.addEventListener('abort', entry.onAbort, { once: true });
    linked.set(caller, entry);
    links = entry;
  }
  links.controllers.add(controller);
  const entry = links;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    entry.controllers.delete(controller);
    if (entry.controllers.size === 0 && linked.get(caller) === entry) {
      caller.removeEventListener('abort', entry.onAbort);
      linked.delete(caller);
    }
  };
  return {
    signal: controller.signal,
    release,
    finish(res) {
      if (res.body === null) {
        release();
        return res;
      }
      const reader = res.body.getReader();
      const body = new ReadableStream<Uint8Array>(
        {
          async pull(stream) {
            try {
              const r = await reader.read();
              if (r.done) {
                release();
                stream.close();
              } else {
                stream.enqueue(r.value);
              }
            } catch (err) {
              release();
              stream.error(err);
            }
          },
          cancel(reason) {
            release();
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
      unread.register(out, release);
      return out;
    },
  };
}
