import type * as undici from 'undici';

/** Unlinks a call from its caller's signal once its body is collected. */
const bodies = new FinalizationRegistry<() => void>((cleanup) => cleanup());

/** How a call listens to the caller's signal: one listener, removed when the call is done. */
export interface SignalLink {
  /** The signal to give undici.fetch for this call alone. */
  signal: AbortSignal;
  /**
   * Hands undici's own Response to the caller, untouched: the call stays linked (a later abort
   * still errors an unread body, as with plain fetch) until its body is collected.
   */
  keep(res: undici.Response): undici.Response;
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
 * listener however many calls are linked to it; a call leaves when it fails, or when its
 * response body is collected. The listener goes when the last call leaves.
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
    keep(res) {
      // The body stream is reachable from the Response and from any reader of it.
      if (res.body === null) release();
      else bodies.register(res.body, release);
      return res;
    },
  };
}
