/** An origin as routes match it and attempts are sent to it. */
export interface ParsedOrigin {
  /** Serialised origin, `http://host:port` (no default port). */
  origin: string;
  host: string;
  hostname: string;
}

const MAX_ENTRIES = 1024;

/**
 * Parses dispatch origins (`opts.origin`, a string or URL) once each: a dispatcher sees few
 * distinct origins, and parsing a URL per call costs more than the rest of the routing.
 */
export class OriginCache {
  private readonly entries = new Map<string, ParsedOrigin>();
  private lastKey = '';
  private last: ParsedOrigin | undefined;

  get(origin: string | URL): ParsedOrigin {
    const key = typeof origin === 'string' ? origin : origin.href;
    // Most dispatchers talk to one origin at a time: compare with the last one first.
    if (key === this.lastKey && this.last !== undefined) return this.last;
    let parsed = this.entries.get(key);
    if (parsed === undefined) {
      const url = new URL(key);
      parsed = { origin: url.origin, host: url.host, hostname: url.hostname };
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
      this.entries.set(key, parsed);
    }
    this.lastKey = key;
    this.last = parsed;
    return parsed;
  }
}

/** The path of a request target without its query. */
export function pathnameOf(path: string): string {
  const q = path.indexOf('?');
  return q === -1 ? path : path.slice(0, q);
}
