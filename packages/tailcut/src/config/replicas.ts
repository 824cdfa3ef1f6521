import { Secret } from '../errors.js';
import { invalid, isObject } from './checks.js';
import type { ReplicaOptions } from './options.js';
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

/** A validated replica: its origin, and the headers only its attempts carry. */
export interface ReplicaSettings {
  origin: string;
  /** Lower-case names; undefined when the replica has none of its own. */
  headers: Record<string, string> | undefined;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function validateHeaders(option: string, value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  const proto = isObject(value) ? Object.getPrototypeOf(value) : undefined;
  if (proto !== Object.prototype && proto !== null) {
    // A Headers or a Map would pass an object check and send nothing: refuse it.
    invalid(
      option,
      new Secret(String(value).length),
      'a plain object of header names to string values (not a Headers or Map)',
    );
  }
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    if (!TOKEN.test(name)) invalid(`${option}.${name}`, name, 'a header name');
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      invalid(`${option}.${name}`, name, 'not a header tailcut or undici sets per call');
    }
    if (typeof v !== 'string') invalid(`${option}.${name}`, typeof v, 'a string');
    if (!FIELD_VALUE.test(v)) {
      invalid(
        `${option}.${name}`,
        new Secret(v.length),
        'a header value (Latin-1, no CR, LF, NUL or other control characters)',
      );
    }
    if (lower in out)
      invalid(`${option}.${name}`, name, 'named once (it is listed twice, in another case)');
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

/** The options of a replica given as an object. */
export const REPLICA_OPTIONS = {
  origin: {
    default: '(required)',
    valid: 'http(s) origin (string or URL)',
    doc: 'where the attempts go',
    check: checkOrigin,
  },
  headers: {
    default: 'none',
    valid: 'object of header names to strings',
    doc: "headers only this replica's attempts carry (an API key per region): any name a replica sets is removed from the caller's headers for every attempt, so no attempt carries another replica's credential",
    check: validateHeaders,
  },
} satisfies OptionTable<ReplicaOptions>;

/**
 * Validates a replica list: origins as strings or URLs, or `{ origin, headers }` for a replica
 * with credentials of its own. Replicas are an allowlist: http/https only, no userinfo, no path,
 * query or fragment, no link-local or cloud-metadata address, no duplicates.
 */
export function validateReplicas(option: string, value: unknown): ReplicaSettings[] {
  if (!Array.isArray(value) || value.length === 0) {
    invalid(option, value, 'a non-empty array of http(s) origins');
  }
  const seen = new Set<string>();
  return value.map((item: unknown, i: number) => {
    const at = `${option}[${i}]`;
    const replica =
      isObject(item) && !(item instanceof URL)
        ? readOptions(at, item, REPLICA_OPTIONS)
        : { origin: checkOrigin(at, item), headers: undefined };
    if (seen.has(replica.origin)) {
      const given = isObject(item) && !(item instanceof URL);
      invalid(given ? `${at}.origin` : at, given ? item.origin : item, 'unique (listed twice)');
    }
    seen.add(replica.origin);
    return replica;
  });
}
