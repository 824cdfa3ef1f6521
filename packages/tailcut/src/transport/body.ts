import { Readable } from 'node:stream';
import * as undici from 'undici';
import { TailcutError } from '../errors.js';
import type { ByteQuota } from './byte-quota.js';

/** A request body as the fetch adapter sends it. */
export interface PreparedBody {
  /** Returns the body for one attempt; for a replayable body, the same bytes every time. */
  next(): unknown;
  /** False when the body can be sent only once (a stream over a cap): the call is not hedged. */
  replayable: boolean;
  /** Content-Type implied by the body, to set when the caller did not. */
  contentType?: string;
  /** Returns buffered bytes to the global quota. */
  release(): void;
}

/** Limits for buffering a one-shot body. */
export interface BufferLimits {
  /** Largest body buffered for one call, bytes. */
  perCall: number;
  /** Quota shared by the client's calls. */
  quota: ByteQuota;
}

type ChunkSource = () => Promise<IteratorResult<unknown>>;

const nothing = () => {};

function fixed(body: unknown, contentType?: string): PreparedBody {
  const prepared: PreparedBody = {
    next: () => body,
    replayable: true,
    release: nothing,
  };
  if (contentType !== undefined) prepared.contentType = contentType;
  return prepared;
}

function toBytes(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk;
  if (typeof chunk === 'string') return Buffer.from(chunk);
  if (ArrayBuffer.isView(chunk))
    return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  throw new TailcutError(
    'TAILCUT_INVALID_REQUEST',
    `tailcut: request body stream yielded a ${typeof chunk} chunk; expected Uint8Array or string`,
  );
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function'
  );
}

/**
 * Throws `TAILCUT_INVALID_REQUEST` for a stream body that is locked or was read from: it can no
 * longer be sent whole, and sending part of it would lose the rest silently.
 */
export function assertUnread(body: unknown, where: string): void {
  const locked = body instanceof ReadableStream && body.locked;
  if (locked || (isStreamBody(body) && Readable.isDisturbed(body as never))) {
    throw new TailcutError(
      'TAILCUT_INVALID_REQUEST',
      `tailcut: ${where} is a stream that is locked or already read; pass an unread stream`,
    );
  }
}

/** True for a one-shot body: a ReadableStream or an async iterable (fetch needs `duplex: 'half'`). */
export function isStreamBody(value: unknown): boolean {
  return value instanceof ReadableStream || isAsyncIterable(value);
}

function isFormData(value: unknown): boolean {
  return value instanceof undici.FormData || value instanceof globalThis.FormData;
}

/** Serialises FormData once, so that every attempt sends the same multipart boundary. */
async function serializeFormData(form: unknown): Promise<PreparedBody> {
  const response =
    form instanceof undici.FormData
      ? new undici.Response(form)
      : new globalThis.Response(form as FormData);
  const bytes = new Uint8Array(await response.arrayBuffer());
  return fixed(bytes, response.headers.get('content-type') ?? undefined);
}

/** A stream body sent once: the chunks already read, then the rest of the source, intact. */
function sendOnce(head: Uint8Array[], rest: ChunkSource, release: () => void): PreparedBody {
  async function* resume(): AsyncGenerator<Uint8Array> {
    yield* head;
    for (;;) {
      const r = await rest();
      if (r.done) return;
      yield toBytes(r.value);
    }
  }
  let used = false;
  return {
    next() {
      if (used) throw new Error('tailcut: a one-shot body was asked for twice');
      used = true;
      return resume();
    },
    replayable: false,
    release,
  };
}

/**
 * Reads a one-shot body into memory within the limits, or hands it on to be sent once. The
 * caller's abort stops it at once, even while the source is stalled: the bytes read go back to
 * the quota, and the source is cancelled.
 */
async function buffer(
  source: ChunkSource,
  cancel: (reason: unknown) => void,
  limits: BufferLimits,
  signal: AbortSignal,
): Promise<PreparedBody> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const release = () => limits.quota.give(size);
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => {
      cancel(signal.reason);
      reject(signal.reason);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => {});
  try {
    for (;;) {
      const r = await Promise.race([source(), aborted]);
      if (r.done) break;
      const chunk = toBytes(r.value);
      if (size + chunk.byteLength > limits.perCall || !limits.quota.take(chunk.byteLength)) {
        chunks.push(chunk);
        return sendOnce(chunks, source, release);
      }
      size += chunk.byteLength;
      chunks.push(chunk);
    }
  } catch (err) {
    // The body failed while being read, or the caller aborted: nothing will be sent, so its
    // bytes go back at once.
    release();
    throw err;
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
  }
  const bytes = chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
  return { ...fixed(bytes), release };
}

/** The prepared form of "no body". */
const NO_BODY: PreparedBody = { next: () => undefined, replayable: true, release: nothing };

/**
 * Prepares a request body for one or more attempts. In-memory bodies (string, bytes,
 * URLSearchParams, Blob) are replayed as they are (bytes are not copied: as with undici, they
 * must stay unchanged until the call settles); FormData is serialised
 * once; streams and async iterables are buffered within the limits when the call may be hedged,
 * else (or over a limit) sent once, intact. Synchronous for in-memory bodies.
 */
export function prepareBody(
  body: unknown,
  hedgeable: boolean,
  limits: BufferLimits,
  caller: { readonly signal: AbortSignal },
): PreparedBody | Promise<PreparedBody> {
  if (body === undefined || body === null) return NO_BODY;
  if (
    typeof body === 'string' ||
    body instanceof Uint8Array ||
    body instanceof URLSearchParams ||
    body instanceof Blob
  ) {
    return fixed(body);
  }
  if (body instanceof ArrayBuffer) return fixed(new Uint8Array(body));
  if (ArrayBuffer.isView(body)) {
    return fixed(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
  }
  if (isFormData(body)) return serializeFormData(body);
  if (body instanceof ReadableStream) {
    assertUnread(body, 'request body');
    if (!hedgeable) return passOnce(body);
    const reader = body.getReader();
    const cancel = (reason: unknown) => void reader.cancel(reason).catch(() => {});
    return buffer(() => reader.read(), cancel, limits, caller.signal);
  }
  if (isAsyncIterable(body)) {
    assertUnread(body, 'request body');
    if (!hedgeable) return passOnce(body);
    const iterator = body[Symbol.asyncIterator]();
    const cancel = () => void iterator.return?.()?.catch(() => {});
    return buffer(() => iterator.next(), cancel, limits, caller.signal);
  }
  throw new TailcutError(
    'TAILCUT_INVALID_REQUEST',
    `tailcut: unsupported request body type ${Object.prototype.toString.call(body)}`,
  );
}

/** A stream body on a call that will not be hedged: handed to fetch untouched. */
function passOnce(body: unknown): PreparedBody {
  return { next: () => body, replayable: false, release: nothing };
}
