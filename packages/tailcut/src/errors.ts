/** Error codes thrown or rejected by tailcut. Each names one kind of failure. */
export type TailcutErrorCode =
  /** An option passed to a tailcut factory is missing, of the wrong type or out of range. */
  | 'TAILCUT_INVALID_OPTION'
  /** A request cannot be sent as given (for example a locked or already-read body stream). */
  | 'TAILCUT_INVALID_REQUEST'
  /** The client was closed with `close()` before this call. */
  | 'TAILCUT_CLOSED'
  /**
   * A replica's request shape could not be applied to a call (a `json` rewrite of a body that is
   * not a JSON object, a `path` function that threw): the call failed before anything was sent.
   */
  | 'TAILCUT_REWRITE_FAILED'
  /** A response body stalled between chunks longer than its route's `chunkTimeoutMs`. */
  | 'TAILCUT_CHUNK_TIMEOUT';

/** The brand of tailcut's errors: `Symbol.for`, so it is the same in every copy of tailcut. */
const BRAND: unique symbol = Symbol.for('tailcut.error') as never;

/**
 * The error type of tailcut. `code` is stable and meant for programs; `message` names the
 * option (or request field) and the value that caused it. `instanceof TailcutError` and
 * {@link isTailcutError} also recognise errors from another copy of tailcut in the same process
 * (two versions installed side by side).
 */
export class TailcutError extends Error {
  override readonly name = 'TailcutError';
  readonly code: TailcutErrorCode;
  readonly [BRAND] = true;

  constructor(code: TailcutErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as { [BRAND]?: unknown })[BRAND] === true
    );
  }
}

/** True when `err` is a {@link TailcutError} (of any copy of tailcut), optionally of `code`. */
export function isTailcutError(err: unknown, code?: TailcutErrorCode): err is TailcutError {
  return err instanceof TailcutError && (code === undefined || err.code === code);
}

/** A value that must not appear in messages (a header value: it may be a credential). */
export class Secret {
  constructor(readonly length: number) {}
}

/**
 * Hides what may be a credential in the URLs of `text`: the userinfo (everything between `://`
 * and the last `@` before the path, spaces, `#` and extra `@` included), the query and the
 * fragment (`?api_key=…`).
 */
function redactUrls(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/)[^/]*@/gi, '$1***@')
    .replace(/([?#])[^"\s]+/g, '$1***');
}

/**
 * Renders a configuration value for an error message: short, unambiguous, never throws, and
 * never repeats a secret into logs (URL userinfo, query and fragment are hidden, and so are the
 * strings inside objects).
 */
export function describeValue(value: unknown): string {
  if (value instanceof Secret) return `a value of ${value.length} characters (not shown)`;
  if (typeof value === 'string') return redactUrls(JSON.stringify(value));
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  if (value instanceof RegExp) return String(value);
  if (value instanceof URL) return redactUrls(value.href);
  if (Array.isArray(value)) return `array(${value.length})`;
  if (value !== null && typeof value === 'object') {
    try {
      // The strings inside an object (header values, keys) are never shown: only its shape.
      const json = JSON.stringify(value, (key, v) =>
        key !== '' && typeof v === 'string' ? '…' : v,
      );
      return json.length > 80 ? `${json.slice(0, 77)}...` : json;
    } catch {
      return Object.prototype.toString.call(value);
    }
  }
  return String(value);
}

/** The AbortError used to cancel losing attempts. */
export function loserAbortError(): DOMException {
  return new DOMException('tailcut: attempt lost the race and was cancelled', 'AbortError');
}
