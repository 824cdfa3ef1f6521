import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import { type HedgeBudget, isHedgeBudget } from '../budget/port.js';
import type { Clock } from '../clock.js';
import { type BudgetSettings, validateBudgetOptions } from './budget-table.js';
import { checkNumber, checkObject, invalid } from './checks.js';
import type { AnyDispatcher, HedgedFetchOptions } from './options.js';
import { ROUTE_OPTIONS, type RouteInput } from './route-table.js';
import { numberOption, objectWithOption } from './specs.js';
import { type OptionTable, readOptions, type SettingsOf } from './table.js';

function checkRoutes(option: string, value: unknown): RouteInput[] {
  if (!Array.isArray(value)) invalid(option, value, 'an array of routes');
  const names = new Set<string>();
  return value.map((r: unknown, i: number) => {
    const route = readOptions(`${option}[${i}]`, r, ROUTE_OPTIONS);
    if (names.has(route.name)) invalid(`${option}[${i}].name`, route.name, 'unique among routes');
    names.add(route.name);
    return route;
  });
}

/** How often a warm connection is pinged by default, ms (below undici's 4 s keep-alive). */
const WARM_INTERVAL_MS = 2_000;

/** `warmConnections`: the ping interval in ms, or undefined when off. */
function checkWarm(option: string, value: unknown): number | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return WARM_INTERVAL_MS;
  if (typeof value !== 'object' || value === null) {
    invalid(option, value, 'a boolean or { intervalMs }');
  }
  const o = checkObject(option, value, ['intervalMs']);
  return checkNumber(`${option}.intervalMs`, o.intervalMs, WARM_INTERVAL_MS, {
    min: 100,
    max: 600_000,
    integer: true,
  });
}

/** The options of createHedgedFetch and hedge(). */
export const CLIENT_OPTIONS = {
  routes: {
    default: '(required)',
    valid: 'array of routes, unique `name`s',
    doc: 'tried in order; the first match wins; a request that matches none passes through unhedged',
    check: checkRoutes,
  },
  budget: {
    default: '`{}`',
    valid: 'budget options (below), or a `createBudget()` object',
    doc: 'the hedge budget of all routes; a `createBudget()` object bounds several clients together',
    check: (option: string, value: unknown): HedgeBudget | BudgetSettings =>
      isHedgeBudget(value) ? value : validateBudgetOptions(value ?? {}, option),
  },
  dispatcher: objectWithOption<AnyDispatcher>('dispatch', {
    default: 'a new undici `Agent`',
    valid: 'undici 7 or 8 `Dispatcher` (createHedgedFetch only)',
    doc: 'used by every attempt; `close()` closes it only if tailcut created it',
  }),
  maxBufferedBodyBytes: numberOption(
    4 * 1024 * 1024,
    { min: 0, max: 2 ** 31 - 1, integer: true },
    {
      default: '4 MiB',
      valid: 'integer 0 … 2³¹−1',
      doc: 'largest stream body buffered for replay per call; a larger one is sent once, unhedged',
    },
  ),
  maxTotalBufferedBytes: numberOption(
    64 * 1024 * 1024,
    { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true },
    {
      default: '64 MiB',
      valid: 'integer ≥ 0',
      doc: "bytes buffered at once across the client's calls",
    },
  ),
  warmConnections: {
    default: '`false`',
    valid: 'boolean, or `{ intervalMs }` (integer 100 … 600,000; default 2,000)',
    doc: 'keeps a connection to every replica open so that a hedge does not pay TCP and TLS setup: an `OPTIONS /` to each replica origin (no headers, below tailcut: no route, budget or telemetry) when the client is composed onto its dispatcher, then every `intervalMs`; stops with `close()` or when the dispatcher is closed',
    check: checkWarm,
  },
  meterProvider: objectWithOption<MeterProvider>('getMeter', {
    default: 'the global OTel API',
    valid: 'object with `getMeter()`',
    doc: "where tailcut's metrics go",
  }),
  tracerProvider: objectWithOption<TracerProvider>('getTracer', {
    default: 'the global OTel API',
    valid: 'object with `getTracer()`',
    doc: "where tailcut's spans go",
  }),
  clock: objectWithOption<Clock>('now', {
    default: 'the real clock',
    valid: '`Clock` (e.g. `VirtualClock` from `tailcut/engine`)',
    doc: 'the time source of delays, windows, the budget tailcut creates and telemetry: tests and simulations',
  }),
} satisfies OptionTable<HedgedFetchOptions>;

/** Client options as validated, before the engine derives its settings. */
export type ClientInput = SettingsOf<typeof CLIENT_OPTIONS>;
