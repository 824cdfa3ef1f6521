import { invalid, isObject } from './checks.js';
import type { ReplicaOptions } from './options.js';
import { type OptionTable, readOptions } from './table.js';

/** Hosts that serve cloud instance metadata (credentials): never a replica. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata', '[fd00:ec2::254]']);

function isLinkLocal(hostname: string): boolean {
  if (/^169\.254\.\d{1,3}\.\d{1,3}$/.test(hostname)) return true;
  return /^\[fe[89ab][0-9a-f]:/i.test(hostname);
}

/** A validated replica: its origin, and the headers only its attempts carry. */
export interface ReplicaSettings {
  origin: string;
  /** Lower-case names; undefined when the replica has none of its own. */
  headers: Record<string, string> | undefined;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function validateHeaders(option: string, value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) invalid(option, value, 'an object of header names to string values');
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) {
    if (!TOKEN.test(name)) invalid(`${option}.${name}`, name, 'a header name');
    if (typeof v !== 'string' || /[\r\n]/.test(v))
      invalid(`${option}.${name}`, v, 'a string without CR or LF');
    if (name.toLowerCase() === 'host') invalid(`${option}.${name}`, v, 'not Host (set per origin)');
    out[name.toLowerCase()] = v;
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
  if (isLinkLocal(url.hostname) || METADATA_HOSTS.has(url.hostname)) {
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
