import type { Dispatcher } from 'undici';
import type { JsonValue } from '../config/options.js';
import { isPath, type PathRewrite } from '../config/replicas.js';
import { TailcutError } from '../errors.js';
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
 * origin (undici sets the right one), without the caller's credentials (`strip`) when this
 * replica may not have them, with this replica's own set or (null) removed, and without
 * Content-Length when its body was rewritten (undici sets the new one). So no attempt carries
 * another replica's credential.
 */
export function attemptHeaders(
  call: HeaderRecord,
  sameOrigin: boolean,
  strip: readonly string[],
  own: Readonly<Record<string, string | null>> | undefined,
  bodyRewritten = false,
): HeaderRecord {
  const out: HeaderRecord = { ...call };
  if (!sameOrigin) delete out.host;
  if (bodyRewritten) delete out['content-length'];
  for (const name of strip) delete out[name];
  if (own !== undefined) {
    for (const [name, value] of Object.entries(own)) {
      if (value === null) delete out[name];
      else out[name] = value;
    }
  }
  return out;
}

/** A replica's request shape, as {@link attemptPath} and {@link rewriteJson} read it. */
export interface ReplicaShape {
  /** Names the replica in errors: `route "chat", replica "azure"`. */
  where: string;
  path: PathRewrite | undefined;
  query: Readonly<Record<string, string | null>> | undefined;
}

/** The `TAILCUT_REWRITE_FAILED` error of a replica's rewrite. */
export function rewriteFailed(where: string, what: string, cause?: unknown): TailcutError {
  return new TailcutError(
    'TAILCUT_REWRITE_FAILED',
    `tailcut: ${where}: ${what}; nothing was sent`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * The request target of an attempt to a replica: its `path` (or its function of the request's
 * path), then the request's query with the replica's `query` merged in (`null` removes). The
 * query is left byte-identical when the replica sets none. Throws `TAILCUT_REWRITE_FAILED`
 * when a path function throws or returns something other than a path.
 */
export function attemptPath(target: string, shape: ReplicaShape): string {
  const q = target.indexOf('?');
  const pathname = q === -1 ? target : target.slice(0, q);
  let search = q === -1 ? '' : target.slice(q);
  let path = pathname;
  if (typeof shape.path === 'string') path = shape.path;
  else if (shape.path !== undefined) {
    let out: unknown;
    try {
      out = shape.path(pathname);
    } catch (err) {
      throw rewriteFailed(shape.where, 'its `path` function threw', err);
    }
    if (!isPath(out)) {
      throw rewriteFailed(
        shape.where,
        `its \`path\` function returned ${typeof out === 'string' ? JSON.stringify(out.slice(0, 80)) : typeof out}, not a path starting with one "/" (visible ASCII, no query, fragment, backslash or spaces)`,
      );
    }
    path = out;
  }
  if (shape.query !== undefined) search = mergeQuery(search, shape.query);
  return path + search;
}

/**
 * The caller's query (`?…` or '') with a replica's parameters set or removed. The caller's other
 * parameters stay byte for byte (a signed URL stays valid); the replica's are form-encoded.
 */
function mergeQuery(search: string, query: Readonly<Record<string, string | null>>): string {
  const names = Object.keys(query);
  const pairs = search.length > 1 ? search.slice(1).split('&') : [];
  const kept = pairs.filter((pair) => pair !== '' && !names.includes(paramName(pair)));
  for (const [name, value] of Object.entries(query)) {
    if (value !== null) kept.push(new URLSearchParams([[name, value]]).toString());
  }
  return kept.length === 0 ? '' : `?${kept.join('&')}`;
}

/** The decoded name of a `name=value` query pair (form encoding: `+` is a space). */
function paramName(pair: string): string {
  const eq = pair.indexOf('=');
  const raw = (eq === -1 ? pair : pair.slice(0, eq)).replaceAll('+', ' ');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * Parses a request body for `json` rewrites: it must be a JSON object. Throws
 * `TAILCUT_REWRITE_FAILED` (naming `where`) otherwise.
 */
export function parseJsonObject(text: string | undefined, where: string): Record<string, unknown> {
  if (text === undefined) {
    throw rewriteFailed(
      where,
      'its `json` rewrite needs a JSON object body, and the request has none',
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw rewriteFailed(
      where,
      'its `json` rewrite needs a JSON object body, and the body is not JSON',
      err,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const kind = Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value;
    throw rewriteFailed(
      where,
      `its \`json\` rewrite needs a JSON object body, and the body is ${kind}`,
    );
  }
  return value as Record<string, unknown>;
}

/** A JSON object body with the replica's top-level `fields` set, as UTF-8 bytes. */
export function rewriteJson(
  body: Readonly<Record<string, unknown>>,
  fields: Readonly<Record<string, JsonValue>>,
): Uint8Array {
  return Buffer.from(JSON.stringify({ ...body, ...fields }));
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
