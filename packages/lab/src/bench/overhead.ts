import { type Child, startChild } from './child.js';

/** The variants compared, each with the bare variant it is measured against. */
const VARIANTS = [
  { id: 'request-bare', name: 'undici.request, bare Agent' },
  {
    id: 'request-passthrough',
    name: 'undici.request, pass-through interceptor',
    baseline: 'request-bare',
  },
  { id: 'request-hedge', name: 'undici.request, Agent + hedge()', baseline: 'request-bare' },
  { id: 'fetch-bare', name: 'undici.fetch, bare Agent' },
  { id: 'fetch-hedge', name: 'createHedgedFetch', baseline: 'fetch-bare' },
] as const;

/** Figures of one variant: medians over the rounds. */
export interface OverheadRow {
  id: string;
  name: string;
  baseline: string | undefined;
  cpuUsPerCall: number;
  /** Lowest and highest round, to show the spread. */
  cpuUsRange: [number, number];
  callsPerSecond: number;
  /** Extra CPU per call over the baseline (0.03 = 3%), from the medians. */
  cpuOverhead?: number;
  heapBytesPerInFlightCall: number;
}

/** Options of {@link measureOverhead}. */
export interface OverheadOptions {
  /** Calls per variant per round. Default 20,000. */
  calls?: number;
  /** Rounds; variants run in rotating order within each. Default 5. */
  rounds?: number;
  /** Calls in flight per variant (closed loop). Default 32. */
  concurrency?: number;
  /** Calls parked on the server for the heap measurement. Default 500. */
  inFlight?: number;
  log?: (line: string) => void;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * Measures tailcut's own cost: CPU µs per call, throughput and heap bytes per call in flight,
 * for undici.request through hedge() and for createHedgedFetch, each beside its bare undici
 * counterpart, with hedging configured but never firing. The server (answering at once) and
 * each variant run in their own processes, so no variant shares JIT state with another; the
 * variants run round by round in rotating order against the same server.
 */
export async function measureOverhead(options: OverheadOptions = {}): Promise<OverheadRow[]> {
  const { calls = 20_000, rounds = 5, concurrency = 32, inFlight = 500, log = () => {} } = options;
  const server = await startChild('./echo-server.js');
  const origin = `http://127.0.0.1:${server.hello.port}`;
  const clients = new Map<string, Child>();
  try {
    for (const v of VARIANTS) {
      clients.set(
        v.id,
        await startChild('./overhead-client.js', [v.id, origin, String(concurrency)]),
      );
    }
    const run = async (id: string, n: number) =>
      (await (clients.get(id) as Child).ask({ run: n }, (m) => 'result' in m)).result as {
        cpuUsPerCall: number;
        callsPerSecond: number;
      };
    for (const v of VARIANTS) await run(v.id, Math.ceil(calls / 4)); // warm-up
    const cpu = new Map<string, number[]>();
    const rate = new Map<string, number[]>();
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < VARIANTS.length; i++) {
        const v = VARIANTS[(i + round) % VARIANTS.length] as (typeof VARIANTS)[number];
        const r = await run(v.id, calls);
        cpu.set(v.id, [...(cpu.get(v.id) ?? []), r.cpuUsPerCall]);
        rate.set(v.id, [...(rate.get(v.id) ?? []), r.callsPerSecond]);
      }
      log(`overhead: round ${round + 1}/${rounds}`);
    }
    const rows: OverheadRow[] = [];
    for (const v of VARIANTS) {
      const client = clients.get(v.id) as Child;
      const held = server.waitFor((m) => m.held === inFlight);
      const parking = client.waitFor((m) => m.parking === inFlight);
      const heap = client.ask({ heap: inFlight }, (m) => 'result' in m);
      await parking;
      await held;
      client.child.send({ parked: true });
      await client.waitFor((m) => m.release === true);
      server.child.send('release');
      const samples = cpu.get(v.id) as number[];
      rows.push({
        id: v.id,
        name: v.name,
        baseline: 'baseline' in v ? v.baseline : undefined,
        cpuUsPerCall: median(samples),
        cpuUsRange: [Math.min(...samples), Math.max(...samples)],
        callsPerSecond: median(rate.get(v.id) as number[]),
        heapBytesPerInFlightCall: ((await heap).result as { heapBytesPerInFlightCall: number })
          .heapBytesPerInFlightCall,
      });
    }
    for (const row of rows) {
      const base = rows.find((r) => r.id === row.baseline);
      if (base) row.cpuOverhead = row.cpuUsPerCall / base.cpuUsPerCall - 1;
    }
    return rows;
  } finally {
    await Promise.all([...clients.values()].map((c) => c.stop()));
    await server.stop();
  }
}
