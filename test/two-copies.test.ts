/**
 * Two copies of tailcut in one process (two versions installed side by side): errors and
 * budgets must still be recognised across them. The built package is copied once more (beside
 * its dependencies, so both resolve the same undici), and a child process loads both copies.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const pkg = fileURLToPath(new URL('../packages/tailcut', import.meta.url));
const second = fileURLToPath(
  new URL('../packages/tailcut/node_modules/.tailcut-second-copy', import.meta.url),
);
const first = pathToFileURL(`${pkg}/dist/index.js`).href;
const other = pathToFileURL(`${second}/dist/index.js`).href;

beforeAll(() => {
  cpSync(`${pkg}/dist`, `${second}/dist`, { recursive: true });
  cpSync(`${pkg}/package.json`, `${second}/package.json`);
});
afterAll(() => rmSync(second, { recursive: true, force: true }));

function run(script: string): unknown {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

describe('two copies of tailcut in one process', () => {
  it('recognise each other’s errors (instanceof and isTailcutError)', () => {
    const result = run(`
      const a = await import(${JSON.stringify(first)});
      const b = await import(${JSON.stringify(other)});
      let err;
      try { b.createHedgedFetch({ routes: 'nope' }); } catch (e) { err = e; }
      console.log(JSON.stringify({
        distinct: a.TailcutError !== b.TailcutError,
        instanceofA: err instanceof a.TailcutError,
        isA: a.isTailcutError(err, 'TAILCUT_INVALID_OPTION'),
        plainError: a.isTailcutError(new Error('x')),
        code: err.code,
      }));
    `);
    expect(result).toEqual({
      distinct: true,
      instanceofA: true,
      isA: true,
      plainError: false,
      code: 'TAILCUT_INVALID_OPTION',
    });
  });

  it('share a budget made by the other copy', () => {
    const result = run(`
      const a = await import(${JSON.stringify(first)});
      const b = await import(${JSON.stringify(other)});
      const budget = a.createBudget({ ratio: 0, minPerSecond: 0 });
      const client = b.createHedgedFetch({ routes: [{ name: 'r' }], budget });
      await client.close();
      console.log(JSON.stringify({ same: client.stats().budget.granted === budget.stats().granted }));
    `);
    expect(result).toEqual({ same: true });
  });
});
