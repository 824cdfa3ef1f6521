import { describeValue, TailcutError } from '../errors.js';

/** Throws the `TAILCUT_INVALID_OPTION` error for `option` holding `value`. */
export function invalid(option: string, value: unknown, expectation: string): never {
  throw new TailcutError(
    'TAILCUT_INVALID_OPTION',
    `tailcut: option \`${option}\` must be ${expectation}; got ${describeValue(value)}`,
  );
}

/**
 * Like {@link invalid}, for a value that must not be repeated (it may be a secret): the message
 * names only its type.
 */
export function invalidType(option: string, value: unknown, expectation: string): never {
  const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
  throw new TailcutError(
    'TAILCUT_INVALID_OPTION',
    `tailcut: option \`${option}\` must be ${expectation}; got ${kind} (value not shown)`,
  );
}

/** True for a plain options object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Requires an options object whose keys are all in `allowed` (a typo must not pass silently). */
export function checkObject(
  option: string,
  value: unknown,
  allowed: readonly string[],
): Record<string, unknown> {
  if (!isObject(value)) invalid(option, value, 'an object');
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      invalid(`${option}.${key}`, value[key], `one of the known options (${allowed.join(', ')})`);
    }
  }
  return value;
}

/** The range a number option accepts. */
export interface NumberRule {
  min?: number;
  max?: number;
  /** Excludes `min` itself. */
  minExclusive?: boolean;
  /** Excludes `max` itself. */
  maxExclusive?: boolean;
  integer?: boolean;
}

/** Requires a finite number within the rule's range; returns `fallback` when undefined. */
export function checkNumber(
  option: string,
  value: unknown,
  fallback: number,
  rule: NumberRule,
): number {
  if (value === undefined) return fallback;
  const lo = rule.min === undefined ? '' : `${rule.minExclusive ? '>' : '>='} ${rule.min}`;
  const hi = rule.max === undefined ? '' : `${rule.maxExclusive ? '<' : '<='} ${rule.max}`;
  const range = [lo, hi].filter(Boolean).join(' and ');
  const expectation = `${rule.integer ? 'an integer' : 'a finite number'}${range ? ` ${range}` : ''}`;
  if (typeof value !== 'number' || !Number.isFinite(value)) invalid(option, value, expectation);
  if (rule.integer && !Number.isInteger(value)) invalid(option, value, expectation);
  if (rule.min !== undefined && (rule.minExclusive ? value <= rule.min : value < rule.min)) {
    invalid(option, value, expectation);
  }
  if (rule.max !== undefined && (rule.maxExclusive ? value >= rule.max : value > rule.max)) {
    invalid(option, value, expectation);
  }
  return value;
}

/** Requires a boolean; returns `fallback` when undefined. */
export function checkBoolean(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') invalid(option, value, 'a boolean');
  return value;
}
