/**
 * Reads recorded latencies for the simulator: CSV with a header, JSON lines and HAR files. It
 * refuses what it cannot read for sure (an ambiguous column, a value that is not a number) rather
 * than guess, since a wrong guess would print a table of believable numbers.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';

/** Why a trace could not be read. */
export type TraceErrorCode =
  /** The file does not exist or cannot be read. */
  | 'TRACE_UNREADABLE'
  /** The latency (or route) column is missing, or not named when several could be it. */
  | 'TRACE_COLUMN'
  /** A value is not a non-negative number of ms, or a line is not valid JSON. */
  | 'TRACE_VALUE'
  /** The file holds no latency at all. */
  | 'TRACE_EMPTY';

/** A trace that cannot be read: `message` names the file, and the line or column at fault. */
export class TraceError extends Error {
  override readonly name = 'TraceError';
  readonly code: TraceErrorCode;

  constructor(code: TraceErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** Options of {@link readTrace}. */
export interface TraceOptions {
  /** CSV: the header of the latency column; JSON lines: the latency field. */
  column?: string | undefined;
  /** CSV: the header of a route column; JSON lines: a route field. One table per route. */
  routeColumn?: string | undefined;
}

/** One route's recorded latencies (ms). `route` is undefined when the trace has no routes. */
export interface TraceRoute {
  route: string | undefined;
  latencies: number[];
}

/** A trace as read: its format, the latency column used and the latencies by route. */
export interface Trace {
  format: 'csv' | 'jsonl' | 'har';
  /** The column or field the latencies came from (`time` for HAR). */
  column: string;
  routes: TraceRoute[];
}

/**
 * Reads a trace of per-attempt latencies in ms. The format follows the extension: `.har` (a HAR
 * file: each entry's `time`, or the sum of its timings; routes are method + URL path), `.jsonl`
 * or `.ndjson` (one JSON object per line), anything else CSV (a header line, then rows; a file
 * of bare numbers, one per line, is read as one column). Throws a {@link TraceError}.
 */
export function readTrace(file: string, options: TraceOptions = {}): Trace {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(err);
    throw new TraceError('TRACE_UNREADABLE', `cannot read the trace ${file}: ${reason}`);
  }
  const ext = extname(file).toLowerCase();
  const trace =
    ext === '.har'
      ? readHar(file, text)
      : ext === '.jsonl' || ext === '.ndjson'
        ? readJsonLines(file, text, options)
        : readCsv(file, text, options);
  if (trace.routes.every((r) => r.latencies.length === 0))
    throw new TraceError('TRACE_EMPTY', `${file}: no latencies found`);
  return trace;
}

/** A latency in ms from a cell, or undefined when it is not a finite non-negative number. */
function latency(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  return (typeof value === 'string' && value.trim() === '') || !Number.isFinite(n) || n < 0
    ? undefined
    : n;
}

/** Groups latencies by route, in the order routes first appear. */
function collector() {
  const byRoute = new Map<string | undefined, number[]>();
  return {
    add(route: string | undefined, ms: number) {
      const list = byRoute.get(route);
      if (list) list.push(ms);
      else byRoute.set(route, [ms]);
    },
    routes: (): TraceRoute[] => [...byRoute].map(([route, latencies]) => ({ route, latencies })),
  };
}

/**
 * Picks the latency column among `names`: the one asked for, or the only numeric one (by the
 * first row's values). Several numeric columns and no choice is refused, listing them.
 */
function pickColumn(
  file: string,
  names: string[],
  numeric: (name: string) => boolean,
  o: TraceOptions,
  what: 'column' | 'field',
): string {
  const list = names.map((n) => JSON.stringify(n)).join(', ');
  if (o.routeColumn !== undefined && !names.includes(o.routeColumn))
    throw new TraceError(
      'TRACE_COLUMN',
      `${file}: --route-column ${JSON.stringify(o.routeColumn)} is not a ${what}; the ${what}s are ${list}`,
    );
  if (o.column !== undefined) {
    if (!names.includes(o.column))
      throw new TraceError(
        'TRACE_COLUMN',
        `${file}: --column ${JSON.stringify(o.column)} is not a ${what}; the ${what}s are ${list}`,
      );
    return o.column;
  }
  const candidates = names.filter((n) => n !== o.routeColumn && numeric(n));
  if (candidates.length === 1) return candidates[0] as string;
  if (candidates.length === 0)
    throw new TraceError('TRACE_COLUMN', `${file}: no numeric ${what} among ${list}`);
  throw new TraceError(
    'TRACE_COLUMN',
    `${file}: several numeric ${what}s (${candidates.map((n) => JSON.stringify(n)).join(', ')}): name the latency one with --column NAME`,
  );
}

/** Splits one CSV line into cells (double quotes may hold commas; "" is a quote). */
function cells(line: string): string[] {
  const out: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(cell.trim());
      cell = '';
    } else cell += c;
  }
  out.push(cell.trim());
  return out;
}

function readCsv(file: string, text: string, o: TraceOptions): Trace {
  const lines = text.split(/\r?\n/).map((l, i) => ({ n: i + 1, cells: cells(l) }));
  const rows = lines.filter((l) => l.cells.some((c) => c !== ''));
  const first = rows[0];
  if (first === undefined) throw new TraceError('TRACE_EMPTY', `${file}: no latencies found`);
  const headerless = first.cells.every((c) => latency(c) !== undefined);
  if (headerless && first.cells.length > 1)
    throw new TraceError(
      'TRACE_COLUMN',
      `${file}: ${first.cells.length} columns and no header line: add a header (e.g. index,latency_ms) and name the latency column with --column NAME`,
    );
  if (headerless && (o.column !== undefined || o.routeColumn !== undefined))
    throw new TraceError(
      'TRACE_COLUMN',
      `${file}: --column and --route-column need a header line; this file starts with a number`,
    );
  const names = headerless ? ['(one number per line)'] : first.cells;
  const data = headerless ? rows : rows.slice(1);
  const sample = data[0]?.cells ?? [];
  const column = pickColumn(
    file,
    names,
    (name) => latency(sample[names.indexOf(name)]) !== undefined,
    o,
    'column',
  );
  const at = names.indexOf(column);
  const routeAt = o.routeColumn === undefined ? -1 : names.indexOf(o.routeColumn);
  const out = collector();
  for (const row of data) {
    const value = row.cells[at];
    const ms = latency(value);
    if (ms === undefined)
      throw new TraceError(
        'TRACE_VALUE',
        `${file}:${row.n}: ${headerless ? 'the value' : `column ${JSON.stringify(column)}`} is ${JSON.stringify(value ?? '')}, not a latency in ms (a number ≥ 0)`,
      );
    out.add(routeAt < 0 ? undefined : (row.cells[routeAt] ?? ''), ms);
  }
  return { format: 'csv', column, routes: out.routes() };
}

function readJsonLines(file: string, text: string, o: TraceOptions): Trace {
  const records: { n: number; value: Record<string, unknown> }[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new TraceError('TRACE_VALUE', `${file}:${i + 1}: not a JSON line`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new TraceError('TRACE_VALUE', `${file}:${i + 1}: not a JSON object`);
    records.push({ n: i + 1, value: value as Record<string, unknown> });
  });
  const first = records[0];
  if (first === undefined) throw new TraceError('TRACE_EMPTY', `${file}: no latencies found`);
  const names = Object.keys(first.value);
  const field = pickColumn(
    file,
    names,
    (name) => typeof first.value[name] === 'number',
    o,
    'field',
  );
  const out = collector();
  for (const { n, value } of records) {
    const ms = typeof value[field] === 'number' ? latency(value[field]) : undefined;
    if (ms === undefined)
      throw new TraceError(
        'TRACE_VALUE',
        `${file}:${n}: field ${JSON.stringify(field)} is ${JSON.stringify(value[field]) ?? 'missing'}, not a latency in ms (a number ≥ 0)`,
      );
    out.add(o.routeColumn === undefined ? undefined : String(value[o.routeColumn] ?? ''), ms);
  }
  return { format: 'jsonl', column: field, routes: out.routes() };
}

interface HarEntry {
  time?: unknown;
  timings?: Record<string, unknown>;
  request?: { method?: unknown; url?: unknown };
}

/** The phases of a HAR entry's `timings` that add up to its `time` (-1: not applicable). */
const HAR_PHASES = ['blocked', 'dns', 'connect', 'send', 'wait', 'receive'] as const;

function readHar(file: string, text: string): Trace {
  let entries: unknown;
  try {
    entries = (JSON.parse(text) as { log?: { entries?: unknown } }).log?.entries;
  } catch {
    throw new TraceError('TRACE_VALUE', `${file}: not a HAR file (not valid JSON)`);
  }
  if (!Array.isArray(entries))
    throw new TraceError('TRACE_VALUE', `${file}: not a HAR file (no log.entries)`);
  const out = collector();
  (entries as HarEntry[]).forEach((entry, i) => {
    const method = String(entry.request?.method ?? 'GET');
    let path: string;
    try {
      path = new URL(String(entry.request?.url)).pathname;
    } catch {
      throw new TraceError(
        'TRACE_VALUE',
        `${file}: entry ${i + 1}: request.url ${JSON.stringify(entry.request?.url)} is not a URL`,
      );
    }
    let ms = latency(entry.time);
    if (ms === undefined && entry.timings !== undefined) {
      const phases = HAR_PHASES.map((k) => entry.timings?.[k]).filter(
        (v): v is number => typeof v === 'number' && v >= 0,
      );
      if (phases.length > 0) ms = phases.reduce((a, b) => a + b, 0);
    }
    if (ms === undefined)
      throw new TraceError(
        'TRACE_VALUE',
        `${file}: entry ${i + 1} (${method} ${path}) has neither a time nor timings in ms`,
      );
    out.add(`${method} ${path}`, ms);
  });
  return { format: 'har', column: 'time', routes: out.routes() };
}
