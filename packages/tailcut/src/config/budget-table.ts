import type { Clock } from '../clock.js';
import type { KeyRequest } from '../request-view.js';
import type { BudgetOptions } from './options.js';
import { functionOption, numberOption, objectWithOption } from './specs.js';
import { type OptionTable, readOptions, type SettingsOf } from './table.js';

/** The budget's options: default, rule and documentation of each. */
export const BUDGET_OPTIONS = {
  ratio: numberOption(
    0.05,
    { min: 0, max: 1 },
    { valid: '0 … 1', doc: 'hedges allowed per call (0.05: at most ~5% extra load)' },
  ),
  minPerSecond: numberOption(
    10,
    { min: 0, max: 1_000_000 },
    {
      valid: '0 … 1,000,000',
      doc: 'hedges always allowed per second, whatever the call rate (a floor for quiet clients)',
    },
  ),
  ttlMs: numberOption(
    10_000,
    { min: 100, max: 600_000, integer: true },
    {
      valid: 'integer 100 … 600,000',
      doc: 'how long deposits (and withdrawals) count, so a quiet period cannot bank a burst',
    },
  ),
  maxConcurrentHedges: numberOption(
    100,
    { min: 0, max: 1_000_000, integer: true },
    {
      valid: 'integer 0 … 1,000,000',
      doc: 'hedges in flight at once; a hedge over the cap is skipped, never queued',
    },
  ),
  cost: functionOption<(request: KeyRequest) => number>('(request) => number', {
    default: 'every call costs 1',
    doc: 'weighs calls (e.g. estimated prompt tokens) so the extra load is bounded in the unit the provider bills: a call deposits `ratio` × cost, its hedge withdraws cost; `minPerSecond` is in that unit; a throwing function, or a negative or non-finite result, counts as 1',
  }),
  clock: objectWithOption<Clock>('now', {
    default: "the client's clock, or the real clock",
    valid: '`Clock`',
    doc: 'time source, for tests and simulations',
  }),
} satisfies OptionTable<BudgetOptions>;

/** Budget options after validation, with defaults applied. */
export type BudgetSettings = SettingsOf<typeof BUDGET_OPTIONS>;

/** Validates budget options; `option` is the path used in error messages. */
export function validateBudgetOptions(input: unknown, option: string): BudgetSettings {
  return readOptions(option, input, BUDGET_OPTIONS);
}
