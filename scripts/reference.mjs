// Regenerates the README's configuration reference from tailcut's option tables (run after a
// build: `pnpm reference`). The test reference.test.ts fails when the README is out of date.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { renderReference, tableCells } from '../packages/tailcut/dist/config/reference.js';

const file = new URL('../README.md', import.meta.url);
const before = readFileSync(file, 'utf8');
const after = renderReference(before);
const changed = tableCells(after) !== tableCells(before);
if (changed) {
  writeFileSync(file, after);
  // The formatter pads the tables' columns.
  execFileSync('npx', ['biome', 'format', '--write', 'README.md'], { stdio: 'inherit' });
}
console.log(changed ? 'README reference rewritten' : 'README reference up to date');
