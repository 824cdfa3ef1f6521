import * as undici from 'undici';
import { TailcutError } from '../errors.js';

/** A fetch call taken apart: what tailcut needs to route, hedge and replay it. */
export interface CallParts {
  url: URL;
  /** Method as the caller wrote it (fetch normalises the standard ones itself). */
  method: string;
  /** Upper-case method, for matching and the idempotency rule. */
  methodKey: string;
  headers: undici.Headers;
  body: unknown;
  signal: AbortSignal | undefined;
  /** The remaining RequestInit fields, passed to every attempt. */
  rest: Record<string, unknown>;
}

interface RequestLike {
  url: string;
  method: string;
  headers: Iterable<[string, string]>;
  body: unknown;
  bodyUsed: boolean;
  signal?: AbortSignal;
  redirect?: string;
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

function parseUrl(value: string): URL {
  try {
    return new URL(value);
  } catch (cause) {
    throw new TypeError(`tailcut: invalid request URL ${JSON.stringify(value)}`, { cause });
  }
}

/** Takes a fetch call's `(input, init)` apart, as fetch itself would read them. */
export function readCall(input: unknown, init: Record<string, unknown> | undefined): CallParts {
  const { method: m, headers: h, body: b, signal: s, ...rest } = init ?? {};
  let url: URL;
  let method = typeof m === 'string' ? m : 'GET';
  let headers = h as undici.HeadersInit | undefined;
  let body = b;
  let signal = s as AbortSignal | null | undefined;
  if (typeof input === 'string' || input instanceof URL) {
    url = parseUrl(String(input));
  } else if (isRequestLike(input)) {
    url = parseUrl(input.url);
    if (m === undefined) method = input.method;
    if (h === undefined) headers = [...input.headers];
    if (b === undefined) {
      if (input.bodyUsed) {
        throw new TailcutError(
          'TAILCUT_INVALID_REQUEST',
          'tailcut: the Request body was already read (bodyUsed); pass an unread Request',
        );
      }
      body = input.body;
    }
    if (s === undefined) signal = input.signal;
    if (rest.redirect === undefined && input.redirect !== undefined) rest.redirect = input.redirect;
  } else {
    url = parseUrl(String(input));
  }
  return {
    url,
    method,
    methodKey: method.toUpperCase(),
    headers: new undici.Headers(headers),
    body,
    signal: signal ?? undefined,
    rest,
  };
}
