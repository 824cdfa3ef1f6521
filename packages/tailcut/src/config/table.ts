import { checkObject } from './checks.js';

/**
 * One option of an options object: how it is checked (which also applies its default) and how
 * the README's configuration reference describes it. Validation, defaults and documentation
 * come from this one entry.
 */
export interface OptionSpec<T> {
  /** The default as the reference shows it. */
  readonly default: string;
  /** The accepted values as the reference shows them. */
  readonly valid: string;
  /** What the option does. */
  readonly doc: string;
  /** Checks the value (undefined when omitted) at `option` and returns the setting. */
  check(option: string, value: unknown): T;
}

/**
 * A table with exactly one entry per key of the options type `O`: an option added to the type
 * and not to the table (or the other way round) fails to compile.
 */
export type OptionTable<O> = { readonly [K in keyof Required<O>]-?: OptionSpec<unknown> };

/** What a table's checks return, key by key. */
export type SettingsOf<T> = {
  -readonly [K in keyof T]: T[K] extends OptionSpec<infer V> ? V : never;
};

/** The option path of `key` under `parent` (`''` for the top level). */
function optionPath(parent: string, key: string): string {
  return parent === '' ? key : `${parent}.${key}`;
}

/**
 * Reads an options object through its table: unknown keys are refused (a typo must not pass
 * silently), each known key is checked and defaulted by its entry. `option` names the object in
 * error messages (`''` for the top level, whose unknown keys are reported as `options.<key>`).
 */
export function readOptions<T extends Record<string, OptionSpec<unknown>>>(
  option: string,
  input: unknown,
  table: T,
): SettingsOf<T> {
  const value = checkObject(option === '' ? 'options' : option, input, Object.keys(table));
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(table)) {
    out[key] = spec.check(optionPath(option, key), value[key]);
  }
  return out as SettingsOf<T>;
}

/** Renders a table as the README's markdown reference (one row per option). */
export function referenceTable(table: Record<string, OptionSpec<unknown>>, prefix = ''): string {
  const rows = Object.entries(table).map(([key, s]) => [
    `\`${prefix}${key}\``,
    s.default,
    s.valid,
    s.doc,
  ]);
  const head = ['option', 'default', 'valid', 'meaning'];
  const cell = (text: string) => text.replaceAll('|', '\\|');
  const line = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;
  return [line(head), `|${head.map(() => ' --- ').join('|')}|`, ...rows.map(line)].join('\n');
}
