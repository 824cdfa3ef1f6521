import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
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

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], (err, stdout, stderr) => {
      resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
    });
  });
}

const lab = (...args: string[]) => cli('simulate', ...args);

/** The table rows of a simulate output: percentile cell, budget, p99, p99.9, extra load. */
function rows(stdout: string): { cell: string; p99: number; p999: number; extra: number }[] {
  return [
    ...stdout.matchAll(/^(no hedging|p\S+) +(?:-|[\d.]+%) +([\d.]+) +([\d.]+) +([\d.]+)%/gm),
  ].map((m) => ({
    cell: m[1] as string,
    p99: Number(m[2]),
    p999: Number(m[3]),
    extra: Number(m[4]),
  }));
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
    expect(r.stdout).toMatch(/p95→p96 +5\.0% .*<- recommended/);
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
    expect(r.stdout).toContain('unhedged: the lowest p99;');
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

  it('a bad argument is one line, a pointer to --help and exit code 2, never a stack', async () => {
    const csv = file('args.csv', `latency_ms\n${latencies(100).join('\n')}\n`);
    for (const [args, message] of [
      [
        ['--budgets', '-0.1'],
        '--budgets must be numbers above 0 and below 1 (both excluded), comma-separated; got "-0.1"',
      ],
      [['--budgets', '0'], '--budgets must be numbers above 0 and below 1 (both excluded)'],
      [['--percentiles', '100'], '--percentiles must be numbers above 0 and below 100 (both'],
      [['--calls', '-3'], '--calls must be a positive number; got "-3"'],
      [['--bogus', '1'], 'unknown option --bogus'],
    ] as const) {
      const r = await lab('--trace', csv, ...args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toContain(`tailcut-lab: ${message}`);
      expect(lines[1]).toBe('see tailcut-lab --help');
    }
  });

  it('run checks the --report directory before it runs anything', async () => {
    const report = join(dir, 'nodir', 'x.html');
    const r = await cli('run', '--rate', '50', '--seconds', '1', '--report', report);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      `tailcut-lab: --report ${report}: the directory ${join(dir, 'nodir')} does not exist`,
    );
  });

  it('prints a no-hedging row from the same calls; no hedged row is slower than it', async () => {
    const csv = file('base.csv', `latency_ms\n${latencies(1000).join('\n')}\n`);
    const r = await lab('--trace', csv, '--percentiles', '95,99', '--budgets', '0.01,0.1');
    expect(r.code).toBe(0);
    const [base, ...hedged] = rows(r.stdout);
    expect(base?.cell).toBe('no hedging');
    expect(base?.extra).toBe(0);
    expect(hedged).toHaveLength(4);
    for (const row of hedged) {
      expect(row.p99).toBeLessThanOrEqual(base?.p99 as number);
      expect(row.p999).toBeLessThanOrEqual(base?.p999 as number);
    }
    expect(r.stdout).toMatch(/\(against [\d.]+ ms unhedged: the lowest p99;/);
  });

  it('marks the rows where the budget, not the percentile, set the delay', async () => {
    const csv = file('limited.csv', `latency_ms\n${latencies(2000).join('\n')}\n`);
    const r = await lab('--trace', csv, '--percentiles', '80,99', '--budgets', '0.05,0.5');
    expect(r.code).toBe(0);
    expect(rows(r.stdout).map((row) => row.cell)).toEqual([
      'no hedging',
      'p80→p96',
      'p80',
      'p99',
      'p99',
    ]);
    expect(r.stdout).toContain('p80→p96: the budget, not the percentile, set the delay');
    expect(r.stdout).toContain('delay until hedges spend about 80% of the budget');
    expect(r.stdout).not.toContain('only stops hedges beyond its ratio');
    for (const line of r.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(100);
  });

  it('does not hedge a call that ends at the delay, and says when hedging does not help', async () => {
    const csv = file('const.csv', `latency_ms\n${'20\n'.repeat(2000)}`);
    const r = await lab('--trace', csv, '--percentiles', '90,99', '--budgets', '0.05,0.1');
    expect(r.code).toBe(0);
    for (const row of rows(r.stdout)) expect(row).toMatchObject({ p99: 20, p999: 20, extra: 0 });
    expect(r.stdout).toContain('hedging does not help on this trace');
    expect(r.stdout).not.toContain('recommended');
  });

  it('ignores a byte order mark in JSON lines and HAR files', async () => {
    const jsonl = file(
      'bom.jsonl',
      `\uFEFF${latencies(50)
        .map((ms) => `{"ms": ${ms}}`)
        .join('\n')}\n`,
    );
    const har = file(
      'bom.har',
      `\uFEFF${JSON.stringify({ log: { entries: [{ request: { method: 'GET', url: 'http://x/a' }, time: 20 }] } })}`,
    );
    for (const trace of [jsonl, har]) {
      const r = await lab('--trace', trace, ...FAST);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
    }
  });

  it('takes decimal numbers only, and refuses a latency over an hour', async () => {
    for (const [value, message] of [
      ['0x10', 'column "latency_ms" is "0x10", not a latency in ms (a decimal number ≥ 0)'],
      ['Infinity', 'column "latency_ms" is "Infinity"'],
      ['3600000000', '3600000000 ms is over an hour: is the trace in µs? ms expected'],
      ['1e300', '1e300 ms is over an hour'],
    ]) {
      const csv = file('units.csv', `latency_ms\n20\n${value}\n21\n`);
      const r = await lab('--trace', csv, ...FAST);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${csv}:3: ${message}`);
    }
    const slow = file('minutes.csv', `latency_ms\n${'90000\n'.repeat(100)}`);
    const r = await lab('--trace', slow, ...FAST);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'warning: the median latency is 90000 ms (over a minute): is the trace in µs? ms expected',
    );
  });

  it('reads quoted CSV fields over several lines, and names a broken quote or a short row', async () => {
    const body = latencies(300).map((v, i) => `"note ${i}\nsecond line",${v}`);
    const csv = file('multiline.csv', `note,latency_ms\n${body.join('\n')}\n`);
    const r = await lab('--trace', csv, ...FAST);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('300 attempt latencies');
    const open = file('open.csv', 'note,latency_ms\nx,20\n"oops,21\ny,22\n');
    const broken = await lab('--trace', open, ...FAST);
    expect(broken.stderr).toContain(`${open}:3: a quoted field opens here and is never closed`);
    const short = file('short-row.csv', 'note,latency_ms\nx,20\n21\n');
    const ragged = await lab('--trace', short, ...FAST);
    expect(ragged.stderr).toContain(`${short}:3: the row has 1 field, the header 2`);
  });

  it('names the real problem: no rows, HAR content, a directory, another delimiter', async () => {
    const har = JSON.stringify({
      log: { entries: [{ request: { method: 'GET', url: 'http://x/a' }, time: 20 }] },
    });
    const cases = [
      [file('header.csv', 'latency_ms\n'), 'a header line and no data rows'],
      [file('semi.csv', 'ts;latency\n0;20\n'), 'separated by semicolons, not commas'],
      [file('tabs.tsv', 'ts\tlatency\n0\t20\n'), 'separated by tabs, not commas'],
    ];
    for (const [trace, message] of cases) {
      const r = await lab('--trace', trace as string, ...FAST);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(message);
    }
    mkdirSync(join(dir, 'adir'));
    const folder = await lab('--trace', join(dir, 'adir'), ...FAST);
    expect(folder.stderr.trim().split('\n')[0]).toBe(
      `tailcut-lab: cannot read the trace ${join(dir, 'adir')}: it is a directory`,
    );
    const json = await lab('--trace', file('saved.json', har), ...FAST);
    expect(json.stderr).toBe('');
    expect(json.stdout).toContain('(har, latency per entry)');
  });

  it('skips HAR entries that never completed, and says how many', async () => {
    const entries = latencies(300).map((ms, i) =>
      i % 3 === 0
        ? {
            request: { method: 'GET', url: 'http://x/a' },
            time: -1,
            timings: { blocked: -1, dns: -1, connect: -1, send: -1, wait: -1, receive: -1 },
          }
        : { request: { method: 'GET', url: 'http://x/a' }, time: Number(ms) },
    );
    const har = file('aborted.har', JSON.stringify({ log: { entries } }));
    const r = await lab('--trace', har, ...FAST);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('skipped 100 HAR entries with no timing (never completed)');
    expect(r.stdout).toContain('route GET /a:\n200 attempt latencies');
  });
});
