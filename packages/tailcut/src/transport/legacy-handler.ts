import type { Dispatcher } from 'undici';

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Record<string, string | string[] | undefined>;

/** undici's handler API before `onRequestStart` (undici ≤ 6, and what undici 7's fetch sends). */
interface LegacyHandler {
  onConnect?(abort: (reason?: Error) => void, context?: object): void;
  onHeaders?(
    statusCode: number,
    rawHeaders: Buffer[],
    resume: () => void,
    statusMessage?: string,
  ): boolean | undefined;
  onData?(chunk: Buffer): boolean | undefined;
  onUpgrade?(statusCode: number, rawHeaders: Buffer[], socket: unknown): void;
  onComplete?(trailers: Buffer[] | null): void;
  onError?(error: Error): void;
}

/**
 * The caller's handler in undici's current API. undici 7 converts a legacy handler before an
 * interceptor sees it; undici 8 has no legacy API and converts nothing, so undici 7's own fetch
 * over an undici 8 dispatcher (a `dispatcher` from undici 8 given to createHedgedFetch) hands
 * tailcut a legacy handler. It is adapted here, as undici 7's WrapHandler does.
 */
export function currentHandler(handler: Handler): Handler {
  const h = handler as Handler & LegacyHandler;
  if (typeof h.onRequestStart === 'function' || typeof h.onResponseStart === 'function') {
    return handler;
  }
  if (typeof h.onHeaders !== 'function' && typeof h.onConnect !== 'function') return handler;
  return new LegacyAdapter(h);
}

class LegacyAdapter implements Handler {
  constructor(private readonly legacy: LegacyHandler) {}

  onRequestStart(controller: Controller, context: object): void {
    this.legacy.onConnect?.((reason) => controller.abort(reason as Error), context);
  }

  onRequestUpgrade(
    _controller: Controller,
    statusCode: number,
    headers: Headers,
    socket: unknown,
  ): void {
    this.legacy.onUpgrade?.(statusCode, rawOf(headers), socket);
  }

  onResponseStart(
    controller: Controller,
    statusCode: number,
    headers: Headers,
    statusMessage?: string,
  ): void {
    const resume = () => controller.resume();
    if (this.legacy.onHeaders?.(statusCode, rawOf(headers), resume, statusMessage) === false) {
      controller.pause();
    }
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.legacy.onData?.(chunk) === false) controller.pause();
  }

  onResponseEnd(_controller: Controller, trailers: Headers): void {
    this.legacy.onComplete?.(rawOf(trailers ?? {}));
  }

  onResponseError(_controller: Controller, error: Error): void {
    if (this.legacy.onError === undefined) throw error;
    this.legacy.onError(error);
  }
}

/** Headers as undici's legacy API gives them: name, value, name, value… as Buffers. */
function rawOf(headers: Headers): Buffer[] {
  const raw: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) {
      raw.push(Buffer.from(name, 'latin1'), Buffer.from(v, 'latin1'));
    }
  }
  return raw;
}
