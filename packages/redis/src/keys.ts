/**
 * The Redis keys of a fleet budget. Every key of one budget carries the hash tag `{name}`, so
 * they live in one slot, and every key expires.
 *
 * | key                                  | type       | holds                                                                 | expires after         |
 * | ------------------------------------ | ---------- | --------------------------------------------------------------------- | --------------------- |
 * | `<prefix>:{<name>}:w:<slice>`        | hash       | one slice (ttlMs / 10) of the window: d deposits, c calls, h hedges and leases, x hedges sent, p penalties (millionths) | ttlMs + 2 slices |
 * | `<prefix>:{<name>}:i`                | sorted set | instances, scored by their last sync (ms, Redis time)                 | ttlMs                 |
 * | `<prefix>:{<name>}:s`                | string     | the fleet's settings (`ttlMs=… ratio=… minPerSecond=…`)               | ttlMs                 |
 * | `<prefix>:{<name>}:q:<instance>`     | string     | the number of the instance's last sync that ran                       | ttlMs                 |
 * | `<prefix>:{<name>}:h:<instance>:<n>` | string     | route name, newline, a compressed HDR histogram of that route's latencies (µs) | 3 × publishMs  |
 * | `<prefix>:{<name>}:hx`               | sorted set | the histogram keys, scored by publish time                            | 3 × publishMs         |
 */
export function baseKey(prefix: string, name: string): string {
  return `${prefix}:{${name}}`;
}

/** The key of a histogram of this instance (`n` numbers the routes). */
export function histogramKey(base: string, instance: string, n: number): string {
  return `${base}:h:${instance}:${n}`;
}
