import { monitorEventLoopDelay } from 'node:perf_hooks';
import { hedge } from 'tailcut';
import * as undici from 'undici';
import { startFleet } from '../fleet/fleet.js';
import { exposedGc, sampleProcess } from './probe.js';

/** Options of {@link runStreams}. */
export interface StreamsOptions {
  /** Streaming calls in flight at the last level. Default 10,000. */
  calls?: number;
  /** Length of each stream, s (a token every 200 ms). Default 120. */
  seconds?: number;
  /** A bare undici Agent instead of the hedged one (the baseline). */
  bare?: boolean;
  log?: (line: string) => void;
}

/** Figures at one number of calls in flight. */
export interface StreamsLevel {
  inFlight: number;
  heapBytesPerCall: number;
  /** Heap added per call in flight since the level before (the first: since none). */
  marginalHeapBytesPerCall: number;
  handlesPerCall: number;
  timersPerCall: number;
  fds: number;
  loopDelayP99Ms: number;
  cpuUsPerToken: number;
  tokensPerSecond: number;
}

/** What a streams run measured. */
export interface StreamsReport {
  bare: boolean;
  calls: number;
  seconds: number;
  levels: StreamsLevel[];
  completed: number;
  failed: number;
  tokens: number;
  hedgesSent: number;
}

const TOKEN_GAP_MS = 200;
const DATA = Buffer.from('data:');

function count(chunk: Buffer): number {
  let n = 0;
  for (let i = chunk.indexOf(DATA); i >= 0; i = chunk.indexOf(DATA, i + DATA.length)) n++;
  return n;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `calls` streaming calls (SSE, a token every 200 ms for `seconds`) in flight on one hedged
 * client (first-token commit, hedging armed), against replicas in a child process: the client's
 * heap, handles and timers per call in flight, its event-loop delay p99 and CPU per token, at a
 * tenth, half and all of `calls`.
 */
export async function runStreams(o: StreamsOptions = {}): Promise<StreamsReport> {
  const calls = o.calls ?? 10_000;
  const seconds = o.seconds ?? 120;
  const log = o.log ?? (() => {});
  const gc = exposedGc();
  const fleet = await startFleet(
    3,
    {
      medianMs: 50,
      sigma: 0.3,
      stallProbability: 0.01,
      stallFactor: 10,
      mode: 'sse',
      tokens: Math.round((seconds * 1000) / TOKEN_GAP_MS),
      tokenGapMs: TOKEN_GAP_MS,
    },
    10,
  );
  const interceptor = hedge({
    routes: [
      {
        name: 'chat',
        replicas: fleet.origins,
        idempotent: true,
        commitOn: 'first-token',
        hedge: { percentile: 95, minSamples: 50, initialDelayMs: 300 },
      },
    ],
  });
  const bare = o.bare ?? false;
  const agent = bare
    ? new undici.Agent({ connections: null })
    : new undici.Agent({ connections: null }).compose(interceptor);
  const origin = fleet.origins[0] as string;
  const state = { started: 0, completed: 0, failed: 0, tokens: 0 };
  const one = async (id: number) => {
    state.started++;
    try {
      const res = await undici.request(`${origin}/v1/chat/completions`, {
        dispatcher: agent,
        method: 'POST',
        body: '{"stream":true}',
        headers: { 'x-lab-call': String(id), 'content-type': 'application/json' },
        bodyTimeout: 0,
      });
      for await (const chunk of res.body) state.tokens += count(chunk as Buffer);
      if (res.statusCode === 200) state.completed++;
      else state.failed++;
    } catch {
      state.failed++;
    }
  };

  const start = performance.now();
  const base = sampleProcess(start, gc);
  let before = { heapBytes: base.heapBytes, inFlight: 0 };
  const running: Promise<void>[] = [];
  const levels: StreamsLevel[] = [];
  const targets = [...new Set([Math.round(calls / 10), Math.round(calls / 2), calls])];
  for (const target of targets) {
    // Ramp up at 1,000 new calls a second, then let the new calls reach their first token.
    while (state.started < target) {
      const batch = Math.min(100, target - state.started);
      for (let i = 0; i < batch; i++) running.push(one(state.started));
      await sleep(100);
    }
    await sleep(3000);
    const inFlight = state.started - state.completed - state.failed;
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const cpu = process.cpuUsage();
    const tokens = state.tokens;
    const t = performance.now();
    await sleep(5000);
    const used = process.cpuUsage(cpu);
    loop.disable();
    const got = state.tokens - tokens;
    const elapsed = (performance.now() - t) / 1000;
    const s = sampleProcess(start, gc);
    const level: StreamsLevel = {
      inFlight,
      heapBytesPerCall: (s.heapBytes - base.heapBytes) / inFlight,
      marginalHeapBytesPerCall: (s.heapBytes - before.heapBytes) / (inFlight - before.inFlight),
      handlesPerCall: (s.handles - base.handles) / inFlight,
      timersPerCall: (s.timers - base.timers) / inFlight,
      fds: s.fds,
      loopDelayP99Ms: loop.percentile(99) / 1e6,
      cpuUsPerToken: (used.user + used.system) / Math.max(1, got),
      tokensPerSecond: got / elapsed,
    };
    levels.push(level);
    before = { heapBytes: s.heapBytes, inFlight };
    log(JSON.stringify(level));
  }
  log('waiting for every stream to end …');
  await Promise.all(running);
  const stats = interceptor.stats();
  await agent.close();
  await fleet.stop();
  return {
    bare,
    calls,
    seconds,
    levels,
    completed: state.completed,
    failed: state.failed,
    tokens: state.tokens,
    hedgesSent: stats.routes.chat?.hedgesSent ?? 0,
  };
}

/** A streams report as the Markdown of BENCHMARKS.md's scale section. */
export function streamsMarkdown(r: StreamsReport, command: string): string {
  return [
    `### ${r.calls.toLocaleString('en-US')} streaming calls in flight on one ${r.bare ? 'bare undici Agent (baseline)' : 'hedged client'}`,
    '',
    `Command: \`${command}\` (${new Date().toISOString()}, Node ${process.version}). SSE streams`,
    `from 3 loopback node:http replicas in a child process, a token every ${TOKEN_GAP_MS} ms for ${r.seconds} s`,
    r.bare
      ? 'each, through one bare undici Agent (no tailcut: the baseline of the hedged run).'
      : 'each, through one undici Agent + hedge() (first-token commit, p95, hedging armed until the first token).',
    'Calls ramp up at 1,000/s; each level is measured over 5 s once all its calls stream.',
    'Heap is used + array buffers after a full GC, over the client before any call; per call =',
    'that ÷ calls in flight; marginal = heap added ÷ calls added since the level before. The machine is shared with other work (CPU figures drift).',
    '',
    '| in flight | heap / call | marginal heap / call | handles / call | timers / call | fds | event-loop delay p99 | CPU / token | tokens/s |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.levels.map(
      (l) =>
        `| ${l.inFlight} | ${(l.heapBytesPerCall / 1024).toFixed(1)} KiB | ${(l.marginalHeapBytesPerCall / 1024).toFixed(1)} KiB | ${l.handlesPerCall.toFixed(2)} | ${l.timersPerCall.toFixed(3)} | ${l.fds} | ${l.loopDelayP99Ms.toFixed(1)} ms | ${l.cpuUsPerToken.toFixed(1)} µs | ${Math.round(l.tokensPerSecond)} |`,
    ),
    '',
    `Streams completed: ${r.completed} of ${r.calls}, failed: ${r.failed}; SSE events read: ${r.tokens}; hedges sent: ${r.hedgesSent}.`,
  ].join('\n');
}
