import { checkNumber, checkObject, invalid, isObject } from './checks.js';

/** Budget settings after validation, with defaults applied. */
export interface BudgetSettings {
  ratio: number;
  minPerSecond: number;
  ttlMs: number;
  maxConcurrentHedges: number;
}

/** Defaults of the hedge budget. */
export const BUDGET_DEFAULTS: BudgetSettings = {
  ratio: 0.05,
  minPerSecond: 10,
  ttlMs: 10_000,
  maxConcurrentHedges: 100,
};

const KEYS = ['ratio', 'minPerSecond', 'ttlMs', 'maxConcurrentHedges', 'clock', 'cost'];

/** Validates budget options; `option` is the path used in error messages. */
export function validateBudgetOptions(input: unknown, option: string): BudgetSettings {
  const value = checkObject(option, input, KEYS);
  const d = BUDGET_DEFAULTS;
  if (value.cost !== undefined && typeof value.cost !== 'function') {
    invalid(`${option}.cost`, value.cost, 'a function (request) => number');
  }
  const clock = value.clock;
  if (clock !== undefined && (!isObject(clock) || typeof clock.now !== 'function')) {
    invalid(`${option}.clock`, clock, 'a Clock (now, setTimeout, clearTimeout)');
  }
  return {
    ratio: checkNumber(`${option}.ratio`, value.ratio, d.ratio, { min: 0, max: 1 }),
    minPerSecond: checkNumber(`${option}.minPerSecond`, value.minPerSecond, d.minPerSecond, {
      min: 0,
      max: 1_000_000,
    }),
    ttlMs: checkNumber(`${option}.ttlMs`, value.ttlMs, d.ttlMs, {
      min: 100,
      max: 600_000,
      integer: true,
    }),
    maxConcurrentHedges: checkNumber(
      `${option}.maxConcurrentHedges`,
      value.maxConcurrentHedges,
      d.maxConcurrentHedges,
      { min: 0, max: 1_000_000, integer: true },
    ),
  };
}
