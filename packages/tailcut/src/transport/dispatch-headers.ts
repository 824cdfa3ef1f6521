import type { Dispatcher } from 'undici';

/** Request headers as a dispatcher sees them, one entry per name (lower case). */
export type HeaderRecord = Record<string, string | string[]>;

/** Reads any of undici's header forms (record, flat array, iterable of pairs) into a record. */
export function toHeaderRecord(headers: Dispatcher.DispatchOptions['headers']): HeaderRecord {
  const out: HeaderRecord = {};
  const add = (name: unknown, value: unknown) => {
    if (value === undefined || value === null) return;
    const key = String(name).toLowerCase();
    const values = Array.isArray(value) ? value.map(String) : [String(value)];
    const prev = out[key];
    if (prev === undefined) out[key] = values.length === 1 ? (values[0] as string) : values;
    else out[key] = [...(Array.isArray(prev) ? prev : [prev]), ...values];
  };
  if (headers === undefined || headers === null) return out;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) add(headers[i], headers[i + 1]);
  } else if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const [name, value] of headers as Iterable<[string, unknown]>) add(name, value);
  } else {
    for (const [name, value] of Object.entries(headers)) add(name, value);
  }
  return out;
}
