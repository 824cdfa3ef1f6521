import type { Dispatcher } from 'undici';
import type { KeyRequest } from '../request-view.js';
import { type HeaderRecord, toHeaderRecord } from './dispatch-headers.js';

/**
 * How the requests of one call are composed from the caller's: pure functions, testable without
 * sockets.
 */

/** What a call adds to the caller's headers. */
export interface CallAdditions {
  /** The Idempotency-Key every attempt carries, unless the caller set one. */
  idempotencyKey: string | undefined;
  /** The body's content type (a serialised FormData), unless the caller set one. */
  contentType: string | undefined;
}

/** The caller's headers, as a record, with the call's Idempotency-Key and content type added. */
export function callHeaders(
  headers: Dispatcher.DispatchOptions['headers'],
  add: CallAdditions,
): HeaderRecord {
  const record = toHeaderRecord(headers);
  if (add.idempotencyKey !== undefined && record['idempotency-key'] === undefined) {
    record['idempotency-key'] = add.idempotencyKey;
  }
  if (add.contentType !== undefined && record['content-type'] === undefined) {
    record['content-type'] = add.contentType;
  }
  return record;
}

/**
 * The headers of an attempt: the call's headers, without Host when the attempt goes to another
 * origin (undici sets the right one), without every name that some replica of the route sets
 * (`strip`), plus this replica's own (`own`). So no attempt carries another replica's credential.
 */
export function attemptHeaders(
  call: HeaderRecord,
  sameOrigin: boolean,
  strip: readonly string[],
  own: Readonly<Record<string, string>> | undefined,
): HeaderRecord {
  const out: HeaderRecord = { ...call };
  if (!sameOrigin) delete out.host;
  for (const name of strip) delete out[name];
  if (own !== undefined) Object.assign(out, own);
  return out;
}

/** What `key` and `cost` functions see of a dispatched request; the body as text if in memory. */
export function keyRequest(opts: Dispatcher.DispatchOptions, body: unknown): KeyRequest {
  return {
    method: opts.method,
    path: opts.path,
    headers: toHeaderRecord(opts.headers),
    text: () =>
      typeof body === 'string'
        ? body
        : body instanceof Uint8Array
          ? new TextDecoder().decode(body)
          : body instanceof URLSearchParams
            ? body.toString()
            : undefined,
  };
}
