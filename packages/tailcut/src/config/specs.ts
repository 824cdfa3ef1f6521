import { checkBoolean, checkNumber, invalid, isObject, type NumberRule } from './checks.js';
import type { OptionSpec } from './table.js';

/** Builders of option table entries for the common kinds of option. */

/** An option holding a number within `rule`, `fallback` when omitted. */
export function numberOption(
  fallback: number,
  rule: NumberRule,
  text: { default?: string; valid: string; doc: string },
): OptionSpec<number> {
  return {
    default: text.default ?? fallback.toLocaleString('en-US'),
    valid: text.valid,
    doc: text.doc,
    check: (option, value) => checkNumber(option, value, fallback, rule),
  };
}

/** An option holding a number within `rule`, or nothing (undefined) when omitted. */
export function optionalNumberOption(
  rule: NumberRule,
  text: { valid: string; doc: string },
): OptionSpec<number | undefined> {
  return {
    default: 'none',
    valid: text.valid,
    doc: text.doc,
    check: (option, value) =>
      value === undefined ? undefined : checkNumber(option, value, 0, rule),
  };
}

/** A boolean option, `fallback` when omitted. */
export function booleanOption(fallback: boolean, doc: string): OptionSpec<boolean> {
  return {
    default: `\`${fallback}\``,
    valid: 'boolean',
    doc,
    check: (option, value) => checkBoolean(option, value, fallback),
  };
}

/** An optional function option (a callback the caller provides). */
export function functionOption<F>(
  signature: string,
  text: { default: string; doc: string },
): OptionSpec<F | undefined> {
  return {
    default: text.default,
    valid: `function \`${signature}\``,
    doc: text.doc,
    check(option, value) {
      if (value !== undefined && typeof value !== 'function') {
        invalid(option, value, `a function ${signature}`);
      }
      return value as F | undefined;
    },
  };
}

/** An optional object option recognised by one method (an OTel provider, a clock). */
export function objectWithOption<T>(
  method: string,
  text: { default: string; valid: string; doc: string },
): OptionSpec<T | undefined> {
  return {
    ...text,
    check(option, value) {
      if (value !== undefined && (!isObject(value) || typeof value[method] !== 'function')) {
        invalid(option, value, `an object with a ${method}() method`);
      }
      return value as T | undefined;
    },
  };
}
