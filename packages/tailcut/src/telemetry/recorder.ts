import {
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  metrics,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type { BodyCounts, Ending } from '../engine/listener.js';
import type { AttemptContext, AttemptOutcome, HedgeOutcome } from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { ATTR, AttributeCache, errorType } from './attributes.js';
import { INSTRUMENTS, type InstrumentSpec } from './instruments.js';
import { VERSION } from './version.js';

function serverOf(origin: string): { address: string; port: number } {
  const url = new URL(origin);
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { address: url.hostname.replace(/^\[|\]$/g, ''), port };
}

function histogram(meter: Meter, spec: InstrumentSpec): Histogram {
  return meter.createHistogram(spec.name, {
    description: spec.description,
    ...(spec.unit === undefined ? {} : { unit: spec.unit }),
    ...(spec.buckets === undefined
      ? {}
      : { advice: { explicitBucketBoundaries: [...spec.buckets] } }),
  });
}

function counter(meter: Meter, spec: InstrumentSpec): Counter {
  return meter.createCounter(spec.name, {
    description: spec.description,
    ...(spec.unit === undefined ? {} : { unit: spec.unit }),
  });
}

export function gauge(meter: Meter, spec: InstrumentSpec) {
  return meter.createObservableGauge(spec.name, {
    description: spec.description,
    ...(spec.unit === undefined ? {} : { unit: spec.unit }),
  });
}

/**
 * Records tailcut's instruments (the table in instruments.ts) through the OpenTelemetry API
 * only, and holds the tracer. With no SDK every instrument is the API's no-op.
 */
export class Recorder {
  readonly meter: Meter;
  readonly tracer: Tracer;
  private readonly requestDuration: Histogram;
  private readonly attemptDuration: Histogram;
  private readonly hedges: Counter;
  private readonly slow: Counter;
  private readonly firstByte: Histogram;
  private readonly chunkGap: Histogram;
  private readonly chunks: Histogram;
  private readonly firstToken: Histogram;
  private readonly tokenGap: Histogram;
  private readonly tokens: Histogram;
  private readonly attrs = new AttributeCache();
  private readonly servers = new Map<string, { address: string; port: number }>();

  constructor(meterProvider?: MeterProvider, tracerProvider?: TracerProvider) {
    const meter = (meterProvider ?? metrics.getMeterProvider()).getMeter('tailcut', VERSION);
    this.meter = meter;
    this.tracer = (tracerProvider ?? trace.getTracerProvider()).getTracer('tailcut', VERSION);
    this.requestDuration = histogram(meter, INSTRUMENTS.requestDuration);
    this.attemptDuration = histogram(meter, INSTRUMENTS.attemptDuration);
    this.hedges = counter(meter, INSTRUMENTS.hedges);
    this.slow = counter(meter, INSTRUMENTS.slow);
    this.firstByte = histogram(meter, INSTRUMENTS.firstByte);
    this.chunkGap = histogram(meter, INSTRUMENTS.chunkGap);
    this.chunks = histogram(meter, INSTRUMENTS.chunks);
    this.firstToken = histogram(meter, INSTRUMENTS.firstToken);
    this.tokenGap = histogram(meter, INSTRUMENTS.tokenGap);
    this.tokens = histogram(meter, INSTRUMENTS.tokensPerCall);
  }

  recordHedge(route: RouteState, outcome: HedgeOutcome): void {
    const name = route.settings.name;
    this.hedges.add(
      1,
      this.attrs.get(`h|${name}|${outcome}`, () => ({
        [ATTR.route]: name,
        [ATTR.hedgeOutcome]: outcome,
      })),
    );
  }

  recordAttempt(
    route: RouteState,
    method: string,
    ctx: AttemptContext,
    origin: string,
    outcome: AttemptOutcome,
    seconds: number,
    ending: Ending,
  ): void {
    const name = route.settings.name;
    const type = errorType(ending);
    const replica = route.picker.name(ctx.replica);
    const key = `a|${name}|${method}|${ctx.kind}|${outcome}|${origin}|${replica}|${ending.status}|${type}`;
    const attrs = this.attrs.get(key, () => {
      const server = this.server(origin);
      const a: Attributes = {
        [ATTR.route]: name,
        [ATTR.method]: method,
        [ATTR.attemptKind]: ctx.kind,
        [ATTR.attemptOutcome]: outcome,
        [ATTR.serverAddress]: server.address,
        [ATTR.serverPort]: server.port,
      };
      if (replica !== undefined) a[ATTR.replica] = replica;
      if (ending.status !== undefined) a[ATTR.status] = ending.status;
      if (type !== undefined) a[ATTR.errorType] = type;
      return a;
    });
    this.attemptDuration.record(seconds, attrs);
  }

  recordCall(
    route: RouteState,
    method: string,
    seconds: number,
    ending: Ending,
    slow: boolean,
    counts: BodyCounts,
  ): void {
    const name = route.settings.name;
    const type = errorType(ending);
    const attrs = this.attrs.get(`c|${name}|${method}|${ending.status}|${type}`, () => {
      const a: Attributes = { [ATTR.route]: name, [ATTR.method]: method };
      if (ending.status !== undefined) a[ATTR.status] = ending.status;
      if (type !== undefined) a[ATTR.errorType] = type;
      return a;
    });
    this.requestDuration.record(seconds, attrs);
    if (slow) this.slow.add(1, this.routeAttrs(route));
    if (counts.chunks > 0) this.chunks.record(counts.chunks, this.routeAttrs(route));
    if (counts.tokens > 0) this.tokens.record(counts.tokens, this.routeAttrs(route));
  }

  /** Streaming figures of a call's answer: first byte and gaps between chunks, seconds. */
  recordFirstByte(route: RouteState, seconds: number): void {
    this.firstByte.record(seconds, this.routeAttrs(route));
  }

  recordChunkGap(route: RouteState, seconds: number): void {
    this.chunkGap.record(seconds, this.routeAttrs(route));
  }

  /** Output events of a streamed answer (first-token routes): first one, and gaps, seconds. */
  recordFirstToken(route: RouteState, seconds: number): void {
    this.firstToken.record(seconds, this.routeAttrs(route));
  }

  recordTokenGap(route: RouteState, seconds: number): void {
    this.tokenGap.record(seconds, this.routeAttrs(route));
  }

  private routeAttrs(route: RouteState): Attributes {
    const name = route.settings.name;
    return this.attrs.get(`r|${name}`, () => ({ [ATTR.route]: name }));
  }

  /** `server.address` and `server.port` of an origin, parsed once. */
  server(origin: string): { address: string; port: number } {
    let s = this.servers.get(origin);
    if (s === undefined) {
      s = serverOf(origin);
      if (this.servers.size < 1024) this.servers.set(origin, s);
    }
    return s;
  }
}
