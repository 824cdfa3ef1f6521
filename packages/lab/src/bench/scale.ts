import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { exposedGc } from './probe.js';
import { writeScalePart } from './scale-section.js';
import { measureSketch, sketchMarkdown } from './sketch.js';
import { runSoak, soakMarkdown } from './soak.js';
import { runStreams, streamsMarkdown } from './streams.js';

/** The lab commands of the scale benchmarks. */
export const SCALE_COMMANDS = ['streams', 'soak', 'sketch'];

/** Flags the scale commands read (as parsed by the CLI). */
export interface ScaleFlags {
  calls: number | undefined;
  seconds: number | undefined;
  rate: number | undefined;
  clients: number | undefined;
  bare: boolean;
  out: string;
}

/**
 * Runs a scale command. They measure heap after full GCs, so the command re-runs itself under
 * `node --expose-gc` when it was not. Each writes its part of BENCHMARKS.md's scale section.
 */
export async function runScaleCommand(command: string, flags: ScaleFlags): Promise<void> {
  const gc = exposedGc();
  if (gc === undefined) {
    const r = spawnSync(process.execPath, ['--expose-gc', ...process.argv.slice(1)], {
      stdio: 'inherit',
    });
    process.exitCode = r.status ?? 1;
    return;
  }
  const log = (l: string) => console.error(l);
  const line = `tailcut-lab ${process.argv.slice(2).join(' ')}`;
  const file = resolve(flags.out);
  if (command === 'sketch') {
    const md = sketchMarkdown(measureSketch(gc), line);
    console.log(md);
    writeScalePart(file, 'sketch', md);
  } else if (command === 'streams') {
    const r = await runStreams({
      calls: flags.calls ?? 10_000,
      seconds: flags.seconds ?? 120,
      bare: flags.bare,
      log,
    });
    const md = streamsMarkdown(r, line);
    console.log(md);
    writeScalePart(file, flags.bare ? 'streams-bare' : 'streams', md);
  } else if (command === 'soak') {
    const r = await runSoak({
      rate: flags.rate ?? 1000,
      seconds: flags.seconds ?? 1200,
      clients: flags.clients ?? 1000,
      log,
    });
    const md = soakMarkdown(r, line);
    console.log(md);
    writeScalePart(file, 'soak', md);
    if (r.pending !== 0 || r.started !== r.ok + r.failed) process.exitCode = 1;
  }
}
