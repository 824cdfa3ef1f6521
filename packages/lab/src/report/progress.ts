import { SingleBar } from 'cli-progress';

/** Progress of a long lab command, on stderr (stdout keeps the tables). */
export interface Progress {
  /** Names what runs now (a strategy, a benchmark section). */
  phase(name: string): void;
  /** Ends the progress (the bar at 100%, or a last line). */
  stop(): void;
}

export interface ProgressOptions {
  /** The command, first on every line. */
  title: string;
  /** How long the command is expected to take, s: the bar's 100%. */
  expectedSeconds: number;
  /** Where to write (default: process.stderr). */
  stream?: NodeJS.WriteStream;
  /** Without a terminal, a plain line this often, ms (default 5,000). */
  everyMs?: number;
}

/**
 * A progress bar of elapsed against expected time on a terminal (cli-progress), or, when stderr
 * is not a terminal (piped, CI), a plain line every few seconds, so that a long run is never
 * silent. The bar never claims 100% before `stop()`.
 */
export function startProgress(o: ProgressOptions): Progress {
  const stream = o.stream ?? process.stderr;
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const total = Math.max(1, Math.round(o.expectedSeconds));
  let phase = '';
  if (stream.isTTY) {
    const bar = new SingleBar({
      stream,
      format: `${o.title} [{bar}] {value}/~{total} s  {phase}`,
      barsize: 24,
      hideCursor: true,
      clearOnComplete: false,
      fps: 4,
    });
    bar.start(total, 0, { phase });
    const value = () => Math.min(total - 1, Math.floor(elapsed()));
    const timer = setInterval(() => bar.update(value(), { phase }), 1000);
    timer.unref();
    return {
      phase(name) {
        phase = name;
        bar.update(value(), { phase });
      },
      stop() {
        clearInterval(timer);
        bar.update(total, { phase: `done in ${elapsed().toFixed(0)} s` });
        bar.stop();
      },
    };
  }
  const line = (what: string) =>
    stream.write(`${o.title}: ${what}, ${elapsed().toFixed(0)} s of about ${total} s\n`);
  const timer = setInterval(() => line(phase || 'starting'), o.everyMs ?? 5000);
  timer.unref();
  return {
    phase(name) {
      if (name !== phase) line(name);
      phase = name;
    },
    stop() {
      clearInterval(timer);
      stream.write(`${o.title}: done in ${elapsed().toFixed(0)} s\n`);
    },
  };
}
