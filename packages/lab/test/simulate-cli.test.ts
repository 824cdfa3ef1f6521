import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { normal, rng } from '../src/random.js';

// The CLI as a user runs it: the compiled lab (built by `pnpm test` first), as a child process.
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tailcut-sim-'));
const FAST = ['--percentiles', '95', '--budgets', '0.05', '--calls', '2000'];

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function lab(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, 'simulate', ...args], (err, stdout, stderr) => {
      resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
    });
  });
}

const random = rng(5);
const draw = () => {
  const base = 20 * Math.exp(0.4 * normal(random));
  return (random() < 0.02 ? base * 10 : base).toFixed(2);
};
const latencies = (n: number) => Array.from({ length: n }, draw);

describe('tailcut-lab simulate', () => {
  it('refuses a CSV with several numeric columns and no --column, listing them', async () => {
    const csv = file(
      'two.csv',
      `index,latency\n${latencies(500)
        .map((v, i) => `${i},${v}`)
        .join('\n')}\n`,
    );
    const r = await lab('--trace', csv, ...FAST);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('several numeric columns ("index", "latency")');
    expect(r.stderr).toContain('--column NAME');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('reads the named column, prints a recommended row and says the budget is a cap', async () => {
    const csv = file(
      'named.csv',
      `index,latency\n${latencies(2000)
        .map((v, i) => `${i},${v}`)
        .join('\n')}\n`,
    );
    const r = await lab('--trace', csv, '--column', 'latency', ...FAST);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('column "latency"');
    expect(r.stdout).toContain('2000 attempt latencies');
    expect(r.stdout).toMatch(/p95 +5\.0% .*<- recommended/);
    expect(r.stdout).toMatch(/recommended: hedge at p95 with a 5\.0% budget/);
    expect(r.stdout).toContain('The budget is a cap, not a spend');
  });

  it('names an unknown --column and the columns there are', async () => {
    const csv = file('other.csv', 'index,latency\n1,20\n');
    const r = await lab('--trace', csv, '--column', 'ms', ...FAST);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--column "ms" is not a column; the columns are "index", "latency"');
  });

  it('refuses a non-numeric value, naming the file and the line', async () => {
    const csv = file('bad.csv', 'latency_ms\n20\n21.5\nn/a\n22\n');
    const r = await lab('--trace', csv, ...FAST);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${csv}:4: column "latency_ms" is "n/a"`);
  });

  it('a missing file is a one-line error and exit code 2, no stack', async () => {
    const r = await lab('--trace', join(dir, 'nope.csv'), ...FAST);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      `tailcut-lab: cannot read the trace ${join(dir, 'nope.csv')}: no such file`,
    );
  });

  it('warns when a percentile rests on too few samples, saying how many it needs', async () => {
    const csv = file('short.csv', `${latencies(50).join('\n')}\n`);
    const r = await lab('--trace', csv, ...FAST);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('warning: p99.9 rests on 50 latencies; it needs at least 10,000');
    expect(r.stdout).toContain('warning: p99 rests on 50 latencies; it needs at least 1,000');
    expect(r.stdout).toContain('warning: p95 rests on 50 latencies; it needs at least 200');
    // The tail it recommends on is p99 when there are too few for p99.9.
    expect(r.stdout).toContain('(the lowest p99;');
  });

  it('reads JSON lines: --column names the field, --route-column gives one table per route', async () => {
    const lines = latencies(1200).map((v, i) =>
      JSON.stringify({ id: i, route: i % 3 === 0 ? '/v1/chat' : '/v1/embeddings', ms: Number(v) }),
    );
    const jsonl = file('calls.jsonl', `${lines.join('\n')}\n`);
    const ambiguous = await lab('--trace', jsonl, ...FAST);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('several numeric fields ("id", "ms")');
    const r = await lab('--trace', jsonl, '--column', 'ms', '--route-column', 'route', ...FAST);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('route /v1/chat:\n400 attempt latencies');
    expect(r.stdout).toContain('route /v1/embeddings:\n800 attempt latencies');
    expect(r.stdout.match(/<- recommended/g)).toHaveLength(2);
    const broken = file('broken.jsonl', '{"ms": 20}\n{"ms": "slow"}\n');
    const bad = await lab('--trace', broken, '--column', 'ms', ...FAST);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`${broken}:2: field "ms" is "slow"`);
  });

  it('reads a HAR file: one table per method and URL path, time or the sum of the timings', async () => {
    const entry = (method: string, url: string, ms: string, i: number) =>
      i % 10 === 0
        ? {
            request: { method, url },
            timings: { blocked: -1, dns: -1, connect: -1, send: 0.5, wait: Number(ms), receive: 1 },
          }
        : { request: { method, url }, time: Number(ms), timings: {} };
    const entries = latencies(600).map((ms, i) =>
      i % 2
        ? entry('POST', `https://api.example.com/v1/chat?i=${i}`, ms, i)
        : entry('GET', `https://api.example.com/v1/models/${i % 4 === 0 ? 'a' : 'b'}`, ms, i),
    );
    const har = file('session.har', JSON.stringify({ log: { version: '1.2', entries } }));
    const r = await lab('--trace', har, ...FAST);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('route POST /v1/chat:\n300 attempt latencies');
    expect(r.stdout).toContain('route GET /v1/models/a:\n150 attempt latencies');
    expect(r.stdout).toContain('route GET /v1/models/b:\n150 attempt latencies');
    const broken = file(
      'broken.har',
      JSON.stringify({ log: { entries: [{ request: { method: 'GET', url: 'http://x/a' } }] } }),
    );
    const bad = await lab('--trace', broken, ...FAST);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('entry 1 (GET /a) has neither a time nor timings');
  });
});
