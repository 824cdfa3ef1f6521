// Regenerates the README's configuration reference from tailcut's option tables (run after a
// build: `pnpm reference`). The test reference.test.ts fails when the README is out of date.
import { readFileSync, writeFileSync } from 'node:fs';
import { renderReference } from '../packages/tailcut/dist/config/reference.js';

const file = new URL('../README.md', import.meta.url);
const before = readFileSync(file, 'utf8');
const after = renderReference(before);
if (after !== before) writeFileSync(file, after);
console.log(after === before ? 'README reference up to date' : 'README reference rewritten');
