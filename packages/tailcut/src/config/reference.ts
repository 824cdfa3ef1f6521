import { MATCH_OPTIONS } from '../routes/matcher.js';
import { BUDGET_OPTIONS } from './budget-table.js';
import { CLIENT_OPTIONS } from './client-table.js';
import { REPLICA_OPTIONS } from './replicas.js';
import { HEDGE_OPTIONS, ROUTE_OPTIONS } from './route-table.js';
import { type OptionSpec, referenceTable } from './table.js';

/** The README's reference tables, by marker name: the options table and the prefix of its rows. */
const TABLES: Record<string, [Record<string, OptionSpec<unknown>>, string]> = {
  client: [CLIENT_OPTIONS, ''],
  route: [ROUTE_OPTIONS, ''],
  match: [MATCH_OPTIONS, 'match.'],
  replica: [REPLICA_OPTIONS, 'replicas[i].'],
  hedge: [HEDGE_OPTIONS, 'hedge.'],
  budget: [BUDGET_OPTIONS, ''],
};

/**
 * Rewrites the configuration reference in a README: each `<!-- options:NAME -->` …
 * `<!-- /options:NAME -->` block becomes the table rendered from the option table NAME, so the
 * documentation cannot drift from validation and defaults.
 */
export function renderReference(readme: string): string {
  return readme.replace(
    /<!-- options:(\w+) -->\n[\s\S]*?<!-- \/options:\1 -->/g,
    (block, name: string) => {
      const entry = TABLES[name];
      if (entry === undefined) return block;
      return `<!-- options:${name} -->\n${referenceTable(entry[0], entry[1])}\n<!-- /options:${name} -->`;
    },
  );
}

/**
 * A text with its markdown tables reduced to their cells (the formatter pads the columns), to
 * compare a README with the reference rendered from the tables.
 */
export function tableCells(text: string): string {
  return text
    .split('\n')
    .map((line) =>
      line.startsWith('|')
        ? line
            .split(/(?<!\\)\|/)
            .map((c) => c.trim().replace(/^-+$/, '-'))
            .join('|')
        : line,
    )
    .join('\n');
}
