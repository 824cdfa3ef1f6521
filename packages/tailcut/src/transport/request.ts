import * as undici from 'undici';
import { TailcutError } from '../errors.js';
import { assertUnread, isStreamBody } from './body.js';

/** A fetch call in the form undici.fetch (v7) reads without loss. */
export interface UndiciCall {
  input: string | URL | undici.Request;
  init: undici.RequestInit;
}

interface RequestLike {
  url: string;
  method: string;
  headers: Iterable<[string, string]>;
  body: ReadableStream | null;
  bodyUsed: boolean;
  signal?: AbortSignal;
  redirect?: undici.RequestRedirect;
  integrity?: string;
  referrer?: string;
  referrerPolicy?: undici.ReferrerPolicy | '';
  cache?: undici.RequestCache;
  credentials?: undici.RequestCredentials;
  keepalive?: boolean;
}

function isRequestLike(value: unknown): value is RequestLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as RequestLike).url === 'string' &&
    typeof (value as RequestLike).method === 'string' &&
    'headers' in value
  );
}

/**
 * Reads a fetch call's `(input, init)` into what undici.fetch v7 sends faithfully. Node's own
 * global `Request` and `FormData` come from the undici Node bundles (6.x on Node 20 and 22), and
 * undici 7 would reject the one and send the other as "[object FormData]": they are converted.
 * A locked or already-read body stream is refused with `TAILCUT_INVALID_REQUEST`. Synchronous
 * but for Node's own FormData, which is serialised first.
 */
export function toUndiciCall(
  input: string | URL | Request,
  init: undici.RequestInit | undefined,
): UndiciCall | Promise<UndiciCall> {
  let out: UndiciCall;
  if (typeof input === 'string' || input instanceof URL || input instanceof undici.Request) {
    out = { input, init: init === undefined ? {} : { ...init } };
  } else if (isRequestLike(input)) {
    if (input.bodyUsed) {
      throw new TailcutError(
        'TAILCUT_INVALID_REQUEST',
        'tailcut: the Request body was already read (bodyUsed); pass an unread Request',
      );
    }
    const fromRequest: undici.RequestInit = {
      method: input.method,
      headers: [...input.headers],
      signal: input.signal ?? null,
    };
    // Everything of the Request that fetch acts on: an integrity mismatch must still reject.
    if (input.redirect !== undefined) fromRequest.redirect = input.redirect;
    if (input.integrity) fromRequest.integrity = input.integrity;
    if (input.referrer !== undefined && input.referrer !== 'about:client') {
      fromRequest.referrer = input.referrer;
    }
    if (input.referrerPolicy) fromRequest.referrerPolicy = input.referrerPolicy;
    if (input.cache !== undefined && input.cache !== 'default') fromRequest.cache = input.cache;
    if (input.credentials !== undefined) fromRequest.credentials = input.credentials;
    if (input.keepalive === true) fromRequest.keepalive = true;
    if (input.body !== null) {
      fromRequest.body = input.body;
      fromRequest.duplex = 'half';
    }
    out = { input: input.url, init: { ...fromRequest, ...init } };
  } else {
    out = { input: String(input), init: init === undefined ? {} : { ...init } };
  }
  const body = out.init.body;
  assertUnread(body, 'init.body');
  if (body instanceof globalThis.FormData && !(body instanceof undici.FormData)) {
    return withNodeFormData(out, body);
  }
  if (out.init.duplex === undefined && isStreamBody(body)) out.init.duplex = 'half';
  return out;
}

/** Serialises Node's own FormData once, with its own boundary and content type. */
async function withNodeFormData(out: UndiciCall, form: FormData): Promise<UndiciCall> {
  const encoded = new globalThis.Response(form);
  const headers = new undici.Headers(out.init.headers);
  if (!headers.has('content-type')) {
    headers.set('content-type', encoded.headers.get('content-type') ?? '');
  }
  out.init.headers = headers;
  out.init.body = new Uint8Array(await encoded.arrayBuffer());
  return out;
}
