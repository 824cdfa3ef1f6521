import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderReference, tableCells } from '../src/config/reference.js';

describe("README's configuration reference", () => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

  it('has a block for every options table', () => {
    for (const name of ['client', 'route', 'match', 'replica', 'hedge', 'budget']) {
      expect(readme).toContain(`<!-- options:${name} -->`);
    }
  });

  it('is the one rendered from the option tables (run `pnpm reference` after changing an option)', () => {
    // Cell by cell: the formatter pads the columns.
    expect(tableCells(renderReference(readme))).toBe(tableCells(readme));
  });
});
