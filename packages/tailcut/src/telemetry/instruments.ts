/**
 * tailcut's instruments: names, kinds, units, buckets and descriptions. The names and units are
 * the public contract dashboards are built on (docs/design.md, "Telemetry"); change them only
 * with a major version.
 */

/** Histogram buckets in seconds, for calls from 1 ms to 10 min. */
export const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60,
  120, 300, 600,
];

/** Buckets of the chunks-per-call histogram. */
export const CHUNK_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

/** One instrument of the contract. */
export interface InstrumentSpec {
  readonly name: string;
  readonly kind: 'histogram' | 'counter' | 'gauge';
  readonly unit?: string;
  readonly buckets?: readonly number[];
  readonly description: string;
}

/** Every instrument tailcut records, by the key the code uses. */
export const INSTRUMENTS = {
  requestDuration: {
    name: 'tailcut.request.duration',
    kind: 'histogram',
    unit: 's',
    buckets: DURATION_BUCKETS,
    description: 'Duration of hedged calls, end to end (to the end of the response body).',
  },
  attemptDuration: {
    name: 'tailcut.attempt.duration',
    kind: 'histogram',
    unit: 's',
    buckets: DURATION_BUCKETS,
    description: 'Duration of each attempt, to its commit point or to when it was cancelled.',
  },
  hedges: {
    name: 'tailcut.hedges',
    kind: 'counter',
    description:
      'Hedges considered, by outcome: sent, won, denied_budget, denied_concurrency, no_replica.',
  },
  slow: {
    name: 'tailcut.requests.slow',
    kind: 'counter',
    description: "Calls slower, end to end, than their route's sloMs.",
  },
  firstByte: {
    name: 'tailcut.stream.time_to_first_byte',
    kind: 'histogram',
    unit: 's',
    buckets: DURATION_BUCKETS,
    description:
      "Time from a call's start to the first body chunk its caller got (time to first byte).",
  },
  chunkGap: {
    name: 'tailcut.stream.chunk_gap',
    kind: 'histogram',
    unit: 's',
    buckets: DURATION_BUCKETS,
    description:
      'Time between consecutive body chunks of an answer (the per-step tail of generation).',
  },
  chunks: {
    name: 'tailcut.stream.chunks',
    kind: 'histogram',
    unit: '{chunk}',
    buckets: CHUNK_BUCKETS,
    description: 'Body chunks per call.',
  },
  firstToken: {
    name: 'tailcut.stream.time_to_first_token',
    kind: 'histogram',
    unit: 's',
    buckets: DURATION_BUCKETS,
    description:
      "Time from a call's start to the first output event of its streamed answer (first-token routes).",
  },
  tokenGap: {
    name: 'tailcut.stream.token_gap',
    kind: 'histogram',
    unit: 's',
    buckets: DURATION_BUCKETS,
    description:
      'Time between chunks carrying output events (inter-token latency, first-token routes).',
  },
  tokensPerCall: {
    name: 'tailcut.stream.tokens',
    kind: 'histogram',
    unit: '{event}',
    buckets: CHUNK_BUCKETS,
    description: 'Output events per call (first-token routes).',
  },
  delay: {
    name: 'tailcut.hedge.delay',
    kind: 'gauge',
    unit: 's',
    description: 'The hedge delay a call starting now would use.',
  },
  tokens: {
    name: 'tailcut.budget.tokens',
    kind: 'gauge',
    description: 'Whole hedges the budget would allow now.',
  },
  latency: {
    name: 'tailcut.request.latency',
    kind: 'gauge',
    unit: 's',
    description: "Percentiles and max of the route's recent call durations (tailcut.statistic).",
  },
  cv: {
    name: 'tailcut.request.latency.cv',
    kind: 'gauge',
    description: "Coefficient of variation of the route's recent call durations.",
  },
  amplification: {
    name: 'tailcut.request.tail_amplification',
    kind: 'gauge',
    description: "Tail amplification factor (p99 / p50) of the route's recent calls.",
  },
  slowRate: {
    name: 'tailcut.request.slow_rate',
    kind: 'gauge',
    description: "Share of the route's recent calls slower than its sloMs.",
  },
} as const satisfies Record<string, InstrumentSpec>;
