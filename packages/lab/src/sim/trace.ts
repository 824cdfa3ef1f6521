/**
 * Reads recorded latencies for the simulator: CSV with a header, JSON lines and HAR files. It
 * refuses what it cannot read for sure (an ambiguous column, a value that is not a number) rather
 * than guess, since a wrong guess would print a table of believable numbers.
 */
import { readFileSync, statSync } from 'node:fs';
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
  /** HAR entries skipped: requests that never completed (time and every timing -1). */
  skipped: number;
  /** What looks wrong but does not stop the simulation. */
  warnings: string[];
}

/** The slowest latency read, ms: one hour (and the simulator's histograms go no further). */
const MAX_MS = 3_600_000;

/**
 * Reads a trace of per-attempt latencies in ms. The format follows the content, then the
 * extension: a HAR file (a JSON document with `log.entries`: each entry's `time`, or the sum of
 * its timings; routes are method + URL path; entries that never completed are skipped), JSON
 * lines (one JSON object per line; `.jsonl`, `.ndjson`), anything else CSV (RFC 4180: a header
 * line, then rows; a file of bare numbers, one per line, is read as one column). A leading
 * byte order mark is ignored. Throws a {@link TraceError}.
 */
export function readTrace(file: string, options: TraceOptions = {}): Trace {
  let text: string;
  try {
    if (statSync(file).isDirectory())
      throw new TraceError('TRACE_UNREADABLE', `cannot read the trace ${file}: it is a directory`);
    text = readFileSync(file, 'utf8').replace(/^\uFEFF/, '');
  } catch (err) {
    if (err instanceof TraceError) throw err;
    const { code, message } = err as NodeJS.ErrnoException;
    const reason = code === 'ENOENT' ? 'no such file' : message;
    throw new TraceError('TRACE_UNREADABLE', `cannot read the trace ${file}: ${reason}`);
  }
  const ext = extname(file).toLowerCase();
  const head = text.trimStart();
  const trace =
    ext === '.har' || (head.startsWith('{') && isHar(text))
      ? readHar(file, text)
      : ext === '.jsonl' || ext === '.ndjson' || head.startsWith('{')
        ? readJsonLines(file, text, options)
        : head.startsWith('[')
          ? refuse(file, 'a JSON array: one JSON object per line (JSON lines) expected')
          : readCsv(file, text, options);
  if (trace.routes.every((r) => r.latencies.length === 0))
    throw new TraceError('TRACE_EMPTY', `${file}: no latencies found`);
  const all = trace.routes.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const median = all[Math.floor(all.length / 2)] as number;
  if (median > 60_000)
    trace.warnings.push(
      `the median latency is ${median} ms (over a minute): is the trace in µs? ms expected`,
    );
  return trace;
}

function refuse(file: string, why: string): never {
  throw new TraceError('TRACE_VALUE', `${file}: ${why}`);
}

/** Whether a text is a JSON document with `log.entries`: a HAR file, whatever its name. */
function isHar(text: string): boolean {
  try {
    return Array.isArray((JSON.parse(text) as { log?: { entries?: unknown } })?.log?.entries);
  } catch {
    return false;
  }
}

/** A decimal number, as written in a trace: no hex, no Infinity, no sign but an optional minus. */
const DECIMAL = /^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * A latency in ms from a cell, undefined when it is not a decimal number ≥ 0; a TraceError
 * (naming `where`) when it is over an hour, which is no latency in ms.
 */
function latency(value: unknown, where: string): number | undefined {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && DECIMAL.test(value.trim())
        ? Number(value)
        : NaN;
  if (!Number.isFinite(n) || n < 0) return undefined;
  if (n > MAX_MS)
    throw new TraceError(
      'TRACE_VALUE',
      `${where}: ${String(value).trim()} ms is over an hour: is the trace in µs? ms expected`,
    );
  return n;
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
  // One column only: it is the latency one, and the rows say what is wrong with its values.
  const others = names.filter((n) => n !== o.routeColumn);
  if (others.length === 1) return others[0] as string;
  if (candidates.length === 0)
    throw new TraceError('TRACE_COLUMN', `${file}: no numeric ${what} among ${list}`);
  throw new TraceError(
    'TRACE_COLUMN',
    `${file}: several numeric ${what}s (${candidates.map((n) => JSON.stringify(n)).join(', ')}): name the latency one with --column NAME`,
  );
}

/**
 * Splits CSV text into records (RFC 4180: double quotes may hold commas and newlines; "" is a
 * quote), each with the line it starts on. Blank lines are left out.
 */
function records(file: string, text: string): { n: number; cells: string[] }[] {
  const out: { n: number; cells: string[] }[] = [];
  let cells: string[] = [];
  let cell = '';
  let quoted = false;
  let line = 1;
  let start = 1;
  let quoteLine = 0;
  const endRecord = () => {
    cells.push(cell.trim());
    if (cells.some((c) => c !== '')) out.push({ n: start, cells });
    cells = [];
    cell = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') line++;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') {
      quoted = true;
      quoteLine = line;
    } else if (c === ',') {
      cells.push(cell.trim());
      cell = '';
    } else if (c === '\n') {
      endRecord();
      start = line;
    } else if (c !== '\r') cell += c;
  }
  if (quoted)
    throw new TraceError(
      'TRACE_VALUE',
      `${file}:${quoteLine}: a quoted field opens here and is never closed (a missing ")`,
    );
  endRecord();
  return out;
}

function readCsv(file: string, text: string, o: TraceOptions): Trace {
  const rows = records(file, text);
  const first = rows[0];
  if (first === undefined) throw new TraceError('TRACE_EMPTY', `${file}: no latencies found`);
  const headerless = first.cells.every((c) => latency(c, `${file}:${first.n}`) !== undefined);
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
  const header = first.cells[0] ?? '';
  for (const [mark, name] of [
    [';', 'semicolons'],
    ['\t', 'tabs'],
  ] as const)
    if (!headerless && names.length === 1 && header.includes(mark))
      throw new TraceError(
        'TRACE_COLUMN',
        `${file}: the header is separated by ${name}, not commas: comma-separated values expected`,
      );
  if (data.length === 0)
    throw new TraceError('TRACE_EMPTY', `${file}: a header line and no data rows`);
  for (const row of data)
    if (row.cells.length !== names.length && !headerless)
      throw new TraceError(
        'TRACE_VALUE',
        `${file}:${row.n}: the row has ${row.cells.length} field${row.cells.length === 1 ? '' : 's'}, the header ${names.length}`,
      );
  const sample = data[0]?.cells ?? [];
  const column = pickColumn(
    file,
    names,
    (name) => latency(sample[names.indexOf(name)], `${file}:${data[0]?.n}`) !== undefined,
    o,
    'column',
  );
  const at = names.indexOf(column);
  const routeAt = o.routeColumn === undefined ? -1 : names.indexOf(o.routeColumn);
  const out = collector();
  for (const row of data) {
    const value = row.cells[at];
    const ms = latency(value, `${file}:${row.n}`);
    if (ms === undefined)
      throw new TraceError(
        'TRACE_VALUE',
        `${file}:${row.n}: ${headerless ? 'the value' : `column ${JSON.stringify(column)}`} is ${JSON.stringify(value ?? '')}, not a latency in ms (a decimal number ≥ 0)`,
      );
    out.add(routeAt < 0 ? undefined : (row.cells[routeAt] ?? ''), ms);
  }
  return { format: 'csv', column, routes: out.routes(), skipped: 0, warnings: [] };
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
    const ms = typeof value[field] === 'number' ? latency(value[field], `${file}:${n}`) : undefined;
    if (ms === undefined)
      throw new TraceError(
        'TRACE_VALUE',
        `${file}:${n}: field ${JSON.stringify(field)} is ${JSON.stringify(value[field]) ?? 'missing'}, not a latency in ms (a number ≥ 0)`,
      );
    out.add(o.routeColumn === undefined ? undefined : String(value[o.routeColumn] ?? ''), ms);
  }
  return { format: 'jsonl', column: field, routes: out.routes(), skipped: 0, warnings: [] };
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
  let skipped = 0;
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
    const where = `${file}: entry ${i + 1} (${method} ${path})`;
    let ms = latency(entry.time, where);
    const timings = HAR_PHASES.map((k) => entry.timings?.[k]);
    if (ms === undefined && entry.timings !== undefined) {
      const phases = timings.filter((v): v is number => typeof v === 'number' && v >= 0);
      if (phases.length > 0)
        ms = latency(
          phases.reduce((a, b) => a + b, 0),
          where,
        );
    }
    // A request that never completed: its time and every timing -1 (HAR's "not applicable").
    if (
      ms === undefined &&
      entry.time === -1 &&
      timings.every((v) => v === -1 || v === undefined)
    ) {
      skipped++;
      return;
    }
    if (ms === undefined)
      throw new TraceError('TRACE_VALUE', `${where} has neither a time nor timings in ms`);
    out.add(`${method} ${path}`, ms);
  });
  if (skipped > 0 && skipped === entries.length)
    throw new TraceError(
      'TRACE_EMPTY',
      `${file}: no latencies found: all ${skipped} entries have no timing (never completed)`,
    );
  return { format: 'har', column: 'time', routes: out.routes(), skipped, warnings: [] };
}
