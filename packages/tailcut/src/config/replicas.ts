import { Secret } from '../errors.js';
import { invalid, invalidType, isObject } from './checks.js';
import type { JsonValue, ReplicaOptions } from './options.js';
import { booleanOption, numberOption } from './specs.js';
import { type OptionTable, readOptions } from './table.js';

/** Hosts that serve cloud instance metadata (credentials): never a replica. */
const METADATA_HOSTS = new Set([
  'metadata.google.internal',
  'metadata',
  'instance-data',
  'instance-data.ec2.internal',
  '100.100.100.200', // Alibaba Cloud
  '[fd00:ec2::254]', // AWS over IPv6
]);

/**
 * A URL's hostname as the network will resolve it: without the trailing dot of a fully
 * qualified name, and an IPv4 address embedded in IPv6 (`[::ffff:169.254.169.254]`, which the
 * URL parser writes `[::ffff:a9fe:a9fe]`) as the IPv4 address it reaches.
 */
function effectiveHost(hostname: string): string {
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  // IPv4-mapped (::ffff:), IPv4-compatible (::), SIIT (::ffff:0:) and NAT64 (64:ff9b::).
  const mapped =
    /^\[(?:::|::ffff:|::ffff:0:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(host) ??
    // 6to4: 2002:AABB:CCDD::/48 embeds the IPv4 address AA.BB.CC.DD.
    /^\[2002:([0-9a-f]{1,4}):([0-9a-f]{1,4})(?::[0-9a-f:]*)?\]$/.exec(host);
  if (mapped === null) return host;
  const hi = Number.parseInt(mapped[1] as string, 16);
  const lo = Number.parseInt(mapped[2] as string, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

function isLinkLocal(host: string): boolean {
  if (/^169\.254\.\d{1,3}\.\d{1,3}$/.test(host)) return true;
  return /^\[fe[89ab][0-9a-f]:/i.test(host);
}

/**
 * Header names a replica may not set: Host is set per origin; the Idempotency-Key belongs to
 * the call (a fixed one would make a de-duplicating server answer every call with the first
 * one's result); the others frame the message or the connection, which undici owns.
 */
const RESERVED_HEADERS = new Set([
  'host',
  'idempotency-key',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'proxy-connection',
]);

/** Header values are visible ASCII and Latin-1 with spaces and tabs: no CR, LF, NUL or controls. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** A replica's path rewrite: the path its attempts use, or a function of the request's. */
export type PathRewrite = string | ((path: string) => string);

/** A validated replica: its origin, name, the shape of its requests, and its rotation. */
export interface ReplicaSettings {
  origin: string;
  /** Label in stats and telemetry: the given name, or the origin. */
  name: string;
  path: PathRewrite | undefined;
  /** Query parameters set (string) or removed (null); undefined when none. */
  query: Readonly<Record<string, string | null>> | undefined;
  /** Lower-case names set (string) or removed (null); undefined when the replica has none. */
  headers: Readonly<Record<string, string | null>> | undefined;
  /** Top-level fields set in a JSON object body; undefined when none. */
  json: Readonly<Record<string, JsonValue>> | undefined;
  hedgeOnly: boolean;
  weight: number;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** True for an object literal (not a Headers, Map, array or class instance). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  const proto = isObject(value) ? Object.getPrototypeOf(value) : undefined;
  return proto === Object.prototype || proto === null;
}

function validateHeaders(
  option: string,
  value: unknown,
): Record<string, string | null> | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) {
    // A Headers or a Map would pass an object check and send nothing: refuse it.
    invalid(
      option,
      new Secret(String(value).length),
      'a plain object of header names to string values or null (not a Headers or Map)',
    );
  }
  const out: Record<string, string | null> = {};
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    if (!TOKEN.test(name)) invalid(`${option}.${name}`, name, 'a header name');
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      invalid(
        `${option}.${name}`,
        name,
        `a header other than those tailcut or undici set per call (${[...RESERVED_HEADERS].join(', ')})`,
      );
    }
    if (lower in out)
      invalid(`${option}.${name}`, name, 'named once (it is listed twice, in another case)');
    if (v === null) {
      out[lower] = null;
      continue;
    }
    if (typeof v !== 'string')
      invalidType(`${option}.${name}`, v, 'a string, or null to remove it');
    if (!FIELD_VALUE.test(v)) {
      invalid(
        `${option}.${name}`,
        new Secret(v.length),
        'a header value (Latin-1, no CR, LF, NUL or other control characters)',
      );
    }
    out[lower] = v;
  }
  return out;
}

/** Checks one origin (string or URL) at `option`; returns it serialised. */
function checkOrigin(option: string, entry: unknown): string {
  if (typeof entry !== 'string' && !(entry instanceof URL)) {
    invalid(option, entry, 'an http(s) origin string or URL');
  }
  let url: URL;
  try {
    url = new URL(String(entry));
  } catch {
    invalid(option, entry, 'a valid absolute URL such as "http://10.0.0.1:8000"');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    invalid(option, entry, 'an http: or https: origin');
  }
  if (url.username !== '' || url.password !== '') {
    invalid(option, entry, 'an origin without credentials (userinfo)');
  }
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    invalid(option, entry, 'an origin without path, query or fragment');
  }
  const host = effectiveHost(url.hostname);
  if (isLinkLocal(host) || METADATA_HOSTS.has(host)) {
    invalid(option, entry, 'not a link-local or cloud-metadata address');
  }
  return url.origin;
}

/**
 * True for a path as a replica's `path` gives it: one `/` then visible ASCII, no `?`, `#` or
 * backslash (`//host/x` and `/\\host/x` read as another host to many URL parsers).
 */
export function isPath(value: unknown): value is string {
  return typeof value === 'string' && /^\/(?![/\\])[!-~]*$/.test(value) && !/[?#\\]/.test(value);
}

function checkPath(option: string, value: unknown): PathRewrite | undefined {
  if (value === undefined || typeof value === 'function') return value as PathRewrite | undefined;
  if (!isPath(value)) {
    invalid(
      option,
      value,
      'a path starting with one "/" (visible ASCII, no query, fragment, backslash or spaces), or a function (path) => path',
    );
  }
  return value;
}

function checkQuery(option: string, value: unknown): Record<string, string | null> | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) {
    invalid(option, value, 'a plain object of query parameter names to strings or null');
  }
  for (const [name, v] of Object.entries(value)) {
    if (name === '') invalid(option, value, 'an object without an empty parameter name');
    if (v !== null && typeof v !== 'string') {
      invalidType(`${option}.${name}`, v, 'a string, or null to remove the parameter');
    }
  }
  return { ...(value as Record<string, string | null>) };
}

/** True for a value JSON represents exactly (no undefined, function, NaN, Date, Map, ...). */
function isJsonValue(value: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((v) => isJsonValue(v, depth + 1));
  return isPlainObject(value) && Object.values(value).every((v) => isJsonValue(v, depth + 1));
}

function checkJson(option: string, value: unknown): Record<string, JsonValue> | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) invalid(option, value, 'a plain object of top-level JSON fields');
  for (const [field, v] of Object.entries(value)) {
    if (!isJsonValue(v)) {
      invalid(
        `${option}.${field}`,
        v,
        'a JSON value (string, finite number, boolean, null, array or plain object)',
      );
    }
  }
  return structuredClone(value) as Record<string, JsonValue>;
}

function checkReplicaName(option: string, value: unknown): string | undefined {
  if (value !== undefined && (typeof value !== 'string' || value.trim() === '')) {
    invalid(option, value, 'a non-empty string');
  }
  return value;
}

/** The options of a replica given as an object. */
export const REPLICA_OPTIONS = {
  origin: {
    default: '(required)',
    valid: 'http(s) origin (string or URL)',
    doc: 'where the attempts go',
    check: checkOrigin,
  },
  name: {
    default: 'the origin',
    valid: 'non-empty string, unique in the route',
    doc: 'label in `stats().routes[route].replicas` and the `tailcut.replica` telemetry attribute (which provider answered, which won)',
    check: checkReplicaName,
  },
  path: {
    default: "the request's path",
    valid: 'path starting with `/`, or `(path) => string`',
    doc: "the path this replica's attempts use instead of the request's (the function gets the request's path without its query); the query is kept. A function that throws or returns something other than a path fails the call with `TAILCUT_REWRITE_FAILED` before anything is sent",
    check: checkPath,
  },
  query: {
    default: 'none',
    valid: 'object of names to strings or `null`',
    doc: "query parameters set on this replica's attempts (merged into the request's); `null` removes one",
    check: checkQuery,
  },
  headers: {
    default: 'none',
    valid: 'object of header names to strings or `null`',
    doc: "headers only this replica's attempts carry (an API key per provider); `null` removes the caller's header. A replica with headers of its own never gets the caller's credentials (`authorization`, `proxy-authorization`, `api-key`, `x-api-key`, `cookie`, and every name some replica of the route sets); on a route where some replica has headers, the caller's credentials go only to the replica the request was sent to, if it has none of its own",
    check: validateHeaders,
  },
  json: {
    default: 'none',
    valid: 'object of field names to JSON values',
    doc: "top-level fields set in the request's JSON object body (a model or deployment name); each replica's body is made once per call and counts against the buffer caps. A body that is not a JSON object fails the call with `TAILCUT_REWRITE_FAILED` before anything is sent",
    check: checkJson,
  },
  hedgeOnly: booleanOption(
    false,
    'never the primary: the replica gets hedges only (a pricier provider, a backup region)',
  ),
  weight: numberOption(
    1,
    { min: 0.001, max: 1_000_000 },
    {
      valid: 'number 0.001 … 1,000,000',
      doc: 'share of primaries in the weighted round robin, relative to the other replicas',
    },
  ),
} satisfies OptionTable<ReplicaOptions>;

/** A replica given as a bare origin. */
function plainReplica(origin: string): ReplicaSettings {
  return {
    origin,
    name: origin,
    path: undefined,
    query: undefined,
    headers: undefined,
    json: undefined,
    hedgeOnly: false,
    weight: 1,
  };
}

/** A replica given as an options object. */
function objectReplica(option: string, item: unknown): ReplicaSettings {
  const r = readOptions(option, item, REPLICA_OPTIONS);
  return { ...r, name: r.name ?? r.origin };
}

/**
 * Validates a replica list: origins as strings or URLs, or {@link ReplicaOptions} objects for a
 * replica with a request shape of its own. Replicas are an allowlist: http/https only, no
 * userinfo, path, query or fragment, no link-local or cloud-metadata address, no duplicate
 * origins or names; at least one may be the primary.
 */
export function validateReplicas(option: string, value: unknown): ReplicaSettings[] {
  if (!Array.isArray(value) || value.length === 0) {
    invalid(option, value, 'a non-empty array of http(s) origins');
  }
  const seen = new Set<string>();
  const names = new Set<string>();
  const replicas = value.map((item: unknown, i: number): ReplicaSettings => {
    const at = `${option}[${i}]`;
    const given = isObject(item) && !(item instanceof URL);
    const replica = given ? objectReplica(at, item) : plainReplica(checkOrigin(at, item));
    if (seen.has(replica.origin)) {
      invalid(given ? `${at}.origin` : at, given ? item.origin : item, 'unique (listed twice)');
    }
    seen.add(replica.origin);
    if (names.has(replica.name)) invalid(`${at}.name`, replica.name, 'unique in the route');
    names.add(replica.name);
    return replica;
  });
  if (replicas.every((r) => r.hedgeOnly)) {
    invalid(option, value, 'a list with at least one replica that is not `hedgeOnly`');
  }
  return replicas;
}
