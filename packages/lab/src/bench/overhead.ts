import { type Child, startChild } from './child.js';

/** The variants compared, each with the bare variant it is measured against. */
const ALL_VARIANTS = [
  { id: 'request-bare', name: 'undici.request, bare Agent', rate: 4000 },
  {
    id: 'request-passthrough',
    name: 'undici.request, pass-through interceptor',
    baseline: 'request-bare',
    rate: 4000,
  },
  {
    id: 'request-hedge',
    name: 'undici.request, Agent + hedge()',
    baseline: 'request-bare',
    rate: 4000,
  },
  {
    id: 'request-hedge-otel',
    name: 'undici.request, Agent + hedge(), OTel SDK installed',
    baseline: 'request-bare',
    rate: 4000,
  },
  {
    id: 'request-hedge-before',
    name: 'undici.request, Agent + hedge(), the baseline build',
    baseline: 'request-bare',
    rate: 4000,
  },
  { id: 'fetch-bare', name: 'undici.fetch, bare Agent', rate: 2000 },
  {
    id: 'fetch-passthrough',
    name: 'undici.fetch, pass-through interceptor',
    baseline: 'fetch-bare',
    rate: 2000,
  },
  { id: 'fetch-hedge', name: 'createHedgedFetch', baseline: 'fetch-bare', rate: 2000 },
  {
    id: 'fetch-hedge-otel',
    name: 'createHedgedFetch, OTel SDK installed',
    baseline: 'fetch-bare',
    rate: 2000,
  },
  {
    id: 'fetch-hedge-before',
    name: 'createHedgedFetch, the baseline build',
    baseline: 'fetch-bare',
    rate: 2000,
  },
] as const;

/** Self time per call by component (µs), of a variant and of its bare counterpart. */
export interface OverheadBreakdown {
  variant: string;
  baseline: string;
  /** Component → [bare µs/call, variant µs/call]. */
  components: Record<string, [number, number]>;
}

/** Figures of one variant: medians over the rounds. */
export interface OverheadRow {
  id: string;
  name: string;
  baseline: string | undefined;
  cpuUsPerCall: number;
  /** Lowest and highest round, to show the spread. */
  cpuUsRange: [number, number];
  callsPerSecond: number;
  /**
   * Extra CPU per call over the baseline (0.03 = 3%): the median of per-round ratios, each
   * round measuring the variant right after its baseline (a paired design that cancels the
   * drift of a shared machine).
   */
  cpuOverhead?: number;
  /** Interquartile range of the per-round ratios. */
  cpuOverheadIqr?: [number, number];
  heapBytesPerInFlightCall: number;
}

/** Options of {@link measureOverhead}. */
export interface OverheadOptions {
  /** Calls per variant per round. Default 5,000. */
  calls?: number;
  /** Rounds; each runs every baseline followed by the variants compared with it. Default 30. */
  rounds?: number;
  /** Calls parked on the server for the heap measurement. Default 500. */
  inFlight?: number;
  /**
   * Another build of tailcut to compare with (the path of its `dist/index.js`, e.g. one built
   * from an earlier commit): adds the `-before` variants, measured in the same rounds.
   */
  before?: string | undefined;
  /** Calls profiled per variant for the breakdown by component. Default 20,000; 0: none. */
  profileCalls?: number;
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
 * counterpart, with hedging configured but never firing, each pair at the same open-loop rate.
 * The server (answering at once) and each variant run in their own processes, so no variant
 * shares JIT state with another; each round runs a baseline, then the variants compared with it.
 */
export async function measureOverhead(
  options: OverheadOptions = {},
): Promise<{ rows: OverheadRow[]; breakdown: OverheadBreakdown[] }> {
  const {
    calls = 4_000,
    rounds = 20,
    inFlight = 500,
    log = () => {},
    before,
    profileCalls = 20_000,
  } = options;
  const VARIANTS = ALL_VARIANTS.filter((v) => before !== undefined || !v.id.endsWith('-before'));
  const server = await startChild('./echo-server.js');
  const origin = `http://127.0.0.1:${server.hello.port}`;
  const clients = new Map<string, Child>();
  try {
    for (const v of VARIANTS) {
      const args = before === undefined ? [v.id, origin] : [v.id, origin, before];
      clients.set(v.id, await startChild('./overhead-client.js', args));
    }
    const rateOf = (id: string) => (VARIANTS.find((v) => v.id === id) as { rate: number }).rate;
    const run = async (id: string, n: number) =>
      (await (clients.get(id) as Child).ask({ run: n, rate: rateOf(id) }, (m) => 'result' in m))
        .result as {
        cpuUsPerCall: number;
        callsPerSecond: number;
      };
    for (const v of VARIANTS) await run(v.id, Math.ceil(calls / 4)); // warm-up
    const cpu = new Map<string, number[]>();
    const rate = new Map<string, number[]>();
    const ratios = new Map<string, number[]>();
    for (let round = 0; round < rounds; round++) {
      const thisRound = new Map<string, number>();
      for (const v of VARIANTS) {
        const r = await run(v.id, calls);
        thisRound.set(v.id, r.cpuUsPerCall);
        cpu.set(v.id, [...(cpu.get(v.id) ?? []), r.cpuUsPerCall]);
        rate.set(v.id, [...(rate.get(v.id) ?? []), r.callsPerSecond]);
        if ('baseline' in v) {
          const ratio = r.cpuUsPerCall / (thisRound.get(v.baseline) as number);
          ratios.set(v.id, [...(ratios.get(v.id) ?? []), ratio]);
        }
      }
      if ((round + 1) % 5 === 0) log(`overhead: round ${round + 1}/${rounds}`);
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
      const r = ratios.get(row.id);
      if (r === undefined) continue;
      const sorted = [...r].sort((a, b) => a - b);
      const at = (q: number) => (sorted[Math.floor(q * (sorted.length - 1))] as number) - 1;
      row.cpuOverhead = median(r) - 1;
      row.cpuOverheadIqr = [at(0.25), at(0.75)];
    }
    const breakdown: OverheadBreakdown[] = [];
    for (const [variant, baseline] of [
      ['request-hedge', 'request-bare'],
      ['fetch-hedge', 'fetch-bare'],
    ] as const) {
      if (profileCalls <= 0) break;
      log(`overhead: profiling ${variant} and ${baseline}`);
      const profileOf = async (id: string) =>
        (
          await (clients.get(id) as Child).ask(
            { profile: profileCalls, rate: rateOf(id) },
            (m) => 'result' in m,
          )
        ).result as Record<string, number>;
      const bare = await profileOf(baseline);
      const mine = await profileOf(variant);
      const components: Record<string, [number, number]> = {};
      for (const name of new Set([...Object.keys(bare), ...Object.keys(mine)])) {
        components[name] = [bare[name] ?? 0, mine[name] ?? 0];
      }
      breakdown.push({ variant, baseline, components });
    }
    return { rows, breakdown };
  } finally {
    await Promise.all([...clients.values()].map((c) => c.stop()));
    await server.stop();
  }
}
