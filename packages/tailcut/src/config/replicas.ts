import { invalid } from './checks.js';

/** Hosts that serve cloud instance metadata (credentials): never a replica. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata', '[fd00:ec2::254]']);

function isLinkLocal(hostname: string): boolean {
  if (/^169\.254\.\d{1,3}\.\d{1,3}$/.test(hostname)) return true;
  return /^\[fe[89ab][0-9a-f]:/i.test(hostname);
}

/**
 * Validates a replica list and returns normalised origins (`http://host:port`).
 * Replicas are an allowlist: http/https only, no credentials, no path, query or fragment,
 * no link-local or cloud-metadata address, no duplicates.
 */
export function validateReplicas(option: string, value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0) {
    invalid(option, value, 'a non-empty array of http(s) origins');
  }
  const seen = new Set<string>();
  return value.map((entry: unknown, i: number) => {
    const at = `${option}[${i}]`;
    if (typeof entry !== 'string' && !(entry instanceof URL)) {
      invalid(at, entry, 'an http(s) origin string or URL');
    }
    let url: URL;
    try {
      url = new URL(String(entry));
    } catch {
      invalid(at, entry, 'a valid absolute URL such as "http://10.0.0.1:8000"');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      invalid(at, entry, 'an http: or https: origin');
    }
    if (url.username !== '' || url.password !== '') {
      invalid(at, entry, 'an origin without credentials (userinfo)');
    }
    if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
      invalid(at, entry, 'an origin without path, query or fragment');
    }
    if (isLinkLocal(url.hostname) || METADATA_HOSTS.has(url.hostname)) {
      invalid(at, entry, 'not a link-local or cloud-metadata address');
    }
    if (seen.has(url.origin)) invalid(at, entry, 'unique (this origin is listed twice)');
    seen.add(url.origin);
    return url.origin;
  });
}
