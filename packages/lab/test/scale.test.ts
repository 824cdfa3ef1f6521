import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// The fleet runs in a child process: use the compiled lab (built by `pnpm test` first).
import { runSoak } from '../dist/bench/soak.js';
import { scaleSection, writeScalePart } from '../src/bench/scale-section.js';

describe('scale benchmarks', () => {
  it('a short soak accounts for every call and closes every client', async () => {
    const r = await runSoak({ rate: 200, seconds: 3, clients: 10, sampleSeconds: 1 });
    expect(r.pending).toBe(0);
    expect(r.started).toBe(r.ok + r.failed);
    expect(r.ok).toBeGreaterThan(0);
    expect(r.clientsOpened).toBe(10);
    expect(r.clientsClosed).toBe(10);
    expect(r.samples.length).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('streams and soak write their own part of the scale section, and the rest stays', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tailcut-scale-')), 'BENCHMARKS.md');
    writeFileSync(file, '# tailcut benchmarks\n\nbody\n');
    writeScalePart(file, 'soak', 'soak one');
    writeScalePart(file, 'streams', 'streams one');
    writeScalePart(file, 'soak', 'soak two');
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith('# tailcut benchmarks\n\nbody\n')).toBe(true);
    expect(text).toContain('soak two');
    expect(text).toContain('streams one');
    expect(text).not.toContain('soak one');
    // What `tailcut-lab bench` keeps when it rewrites the file.
    const kept = scaleSection(file);
    expect(kept.startsWith('<!-- scale -->')).toBe(true);
    expect(kept.endsWith('<!-- /scale -->')).toBe(true);
    expect(kept).toContain('streams one');
  });
});
