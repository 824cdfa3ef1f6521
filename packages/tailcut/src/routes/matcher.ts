import { invalid, isObject } from '../config/checks.js';
import type { RouteMatch } from '../config/options.js';
import { type OptionTable, readOptions } from '../config/table.js';

/** The parts of a request a route matches on. */
export interface RequestTarget {
  /** Serialised origin, `http://host:port` (no default port). */
  origin: string;
  /** `name:port` as in URL.host (no port when it is the scheme's default). */
  host: string;
  hostname: string;
  /** Path without the query. */
  pathname: string;
}

/** Tests whether a request (upper-case method and target) belongs to a route. */
export type RouteMatcher = (method: string, target: RequestTarget) => boolean;

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function compileMethods(option: string, value: unknown): Set<string> | undefined {
  if (value === undefined) return undefined;
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0) {
    invalid(option, value, 'an HTTP method or a non-empty array of methods');
  }
  return new Set(
    list.map((m: unknown) => {
      if (typeof m !== 'string' || !TOKEN.test(m)) invalid(option, m, 'an HTTP method token');
      return m.toUpperCase();
    }),
  );
}

function compileHost(
  option: string,
  value: unknown,
): ((target: RequestTarget) => boolean) | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || /[/\s@?#]/.test(value)) {
    invalid(option, value, 'a host name, optionally with ":port"');
  }
  const host = value.toLowerCase();
  return (target) => target.host === host || target.hostname === host;
}

function compilePath(option: string, value: unknown): ((pathname: string) => boolean) | undefined {
  if (value === undefined) return undefined;
  if (value instanceof RegExp) {
    if (value.global || value.sticky) {
      invalid(option, value, 'a RegExp without the g or y flag (they make test() stateful)');
    }
    return (pathname) => value.test(pathname);
  }
  if (typeof value !== 'string' || !value.startsWith('/')) {
    invalid(option, value, 'a path starting with "/", a "prefix/*" pattern, or a RegExp');
  }
  if (value.endsWith('/*')) {
    const prefix = value.slice(0, -2);
    const withSlash = `${prefix}/`;
    return (pathname) => pathname === prefix || pathname.startsWith(withSlash);
  }
  if (value.includes('*')) invalid(option, value, 'exact, or ending in "/*" for a prefix');
  return (pathname) => pathname === value;
}

/** The `match` options: each compiles to a test, or undefined for "any". */
export const MATCH_OPTIONS = {
  method: {
    default: 'any',
    valid: 'method token or array of them, case-insensitive',
    doc: 'the request method',
    check: compileMethods,
  },
  host: {
    default: 'any',
    valid: '`host` or `host:port`, case-insensitive',
    doc: 'compared with the request URL; a route with replicas and no host applies to requests sent to its replicas only',
    check: compileHost,
  },
  path: {
    default: 'any',
    valid: '`/exact`, `/prefix/*`, or a RegExp without `g`/`y`',
    doc: 'tested against the pathname (no query); a RegExp runs on every call, so a pattern with catastrophic backtracking blocks the event loop',
    check: compilePath,
  },
} satisfies OptionTable<RouteMatch>;

/** A compiled `match` option. */
export interface CompiledMatch {
  test: RouteMatcher;
  /** True when the route names its host (`match.host`). */
  byHost: boolean;
}

/** Compiles a route's `match` option; `option` is the path used in error messages. */
export function compileMatch(option: string, value: unknown): CompiledMatch {
  if (value === undefined) return { test: () => true, byHost: false };
  if (!isObject(value)) invalid(option, value, 'an object with method, host and/or path');
  const { method: methods, host, path } = readOptions(option, value, MATCH_OPTIONS);
  return {
    test: (method, target) =>
      (methods === undefined || methods.has(method)) &&
      (host === undefined || host(target)) &&
      (path === undefined || path(target.pathname)),
    byHost: host !== undefined,
  };
}

/**
 * A route's matcher. A route with replicas and no `match.host` applies to requests sent to one
 * of its replicas only: a request to any other origin (a third-party API, a redirect's target)
 * is not its service, and must not be rewritten to its replicas with their credentials.
 */
export function routeMatcher(match: CompiledMatch, replicas: readonly string[]): RouteMatcher {
  if (match.byHost || replicas.length === 0) return match.test;
  const origins = new Set(replicas);
  const test = match.test;
  return (method, target) => origins.has(target.origin) && test(method, target);
}
