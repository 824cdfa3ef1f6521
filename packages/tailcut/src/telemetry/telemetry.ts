import {
  type Attributes,
  type Context,
  type Counter,
  context,
  type Histogram,
  type MeterProvider,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type { Hedger } from '../engine/hedger.js';
import type { AttemptContext, AttemptOutcome, HedgeOutcome } from '../engine/race.js';
import type { RouteState } from '../engine/route-state.js';
import { VERSION } from './version.js';

/** Histogram buckets in seconds, for calls from 1 ms to 10 min. */
export const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60,
  120, 300, 600,
];

/** Attribute keys (standard where one exists). */
const ROUTE = 'tailcut.route';
const METHOD = 'http.request.method';
const STATUS = 'http.response.status_code';
const ERROR_TYPE = 'error.type';
const SERVER_ADDRESS = 'server.address';
const SERVER_PORT = 'server.port';

/** How an attempt or a call ended, for attributes. */
export interface Ending {
  status?: number | undefined;
  error?: unknown;
}

/** The attribute sets of a route, made once per distinct combination (bounded cardinality). */
class AttributeCache {
  private readonly sets = new Map<string, Attributes>();

  get(key: string, make: () => Attributes): Attributes {
    let attrs = this.sets.get(key);
    if (attrs === undefined) {
      attrs = Object.freeze(make());
      if (this.sets.size < 4096) this.sets.set(key, attrs);
    }
    return attrs;
  }
}

function errorType(ending: Ending): string | undefined {
  if (ending.error !== undefined) {
    const err = ending.error as { code?: unknown; name?: unknown };
    if (typeof err.code === 'string') return err.code;
    if (typeof err.name === 'string') return err.name;
    return '_OTHER';
  }
  if (ending.status !== undefined && ending.status >= 400) return String(ending.status);
  return undefined;
}

function serverOf(origin: string): { address: string; port: number } {
  const url = new URL(origin);
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { address: url.hostname.replace(/^\[|\]$/g, ''), port };
}

/**
 * tailcut's metrics and traces, through the OpenTelemetry API only: the app brings the SDK
 * (or passes providers). With no SDK, every instrument is the API's no-op and no span records,
 * so the cost is a few no-op calls per attempt.
 */
export class Telemetry {
  readonly tracer: Tracer;
  private readonly requestDuration: Histogram;
  private readonly attemptDuration: Histogram;
  private readonly hedges: Counter;
  private readonly slow: Counter;
  private readonly firstByte: Histogram;
  private readonly chunkGap: Histogram;
  private readonly chunks: Histogram;
  private readonly attrs = new AttributeCache();
  private readonly servers = new Map<string, { address: string; port: number }>();

  constructor(hedger: Hedger, meterProvider?: MeterProvider, tracerProvider?: TracerProvider) {
    const meter = (meterProvider ?? metrics.getMeterProvider()).getMeter('tailcut', VERSION);
    this.tracer = (tracerProvider ?? trace.getTracerProvider()).getTracer('tailcut', VERSION);
    const advice = { explicitBucketBoundaries: DURATION_BUCKETS };
    this.requestDuration = meter.createHistogram('tailcut.request.duration', {
      unit: 's',
      description: 'Duration of hedged calls, end to end (to the end of the response body).',
      advice,
    });
    this.attemptDuration = meter.createHistogram('tailcut.attempt.duration', {
      unit: 's',
      description: 'Duration of each attempt, to its commit point or to when it was cancelled.',
      advice,
    });
    this.hedges = meter.createCounter('tailcut.hedges', {
      description:
        'Hedges considered, by outcome: sent, won, denied_budget, denied_concurrency, no_replica.',
    });
    this.slow = meter.createCounter('tailcut.requests.slow', {
      description: "Calls slower, end to end, than their route's sloMs.",
    });
    this.firstByte = meter.createHistogram('tailcut.stream.time_to_first_byte', {
      unit: 's',
      description:
        "Time from a call's start to the first body chunk its caller got (time to first token).",
      advice,
    });
    this.chunkGap = meter.createHistogram('tailcut.stream.chunk_gap', {
      unit: 's',
      description:
        'Time between consecutive body chunks of an answer (the per-step tail of generation).',
      advice,
    });
    this.chunks = meter.createHistogram('tailcut.stream.chunks', {
      unit: '{chunk}',
      description: 'Body chunks per call.',
      advice: {
        explicitBucketBoundaries: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000],
      },
    });
    const delay = meter.createObservableGauge('tailcut.hedge.delay', {
      unit: 's',
      description: 'The hedge delay a call starting now would use.',
    });
    const tokens = meter.createObservableGauge('tailcut.budget.tokens', {
      description: 'Whole hedges the budget would allow now.',
    });
    const latency = meter.createObservableGauge('tailcut.request.latency', {
      unit: 's',
      description: "Percentiles and max of the route's recent call durations (tailcut.statistic).",
    });
    const cv = meter.createObservableGauge('tailcut.request.latency.cv', {
      description: "Coefficient of variation of the route's recent call durations.",
    });
    const amplification = meter.createObservableGauge('tailcut.request.tail_amplification', {
      description: "Tail amplification factor (p99 / p50) of the route's recent calls.",
    });
    const slowRate = meter.createObservableGauge('tailcut.request.slow_rate', {
      description: "Share of the route's recent calls slower than its sloMs.",
    });
    meter.addBatchObservableCallback(
      (result) => {
        result.observe(tokens, hedger.budget.stats().tokens);
        for (const route of hedger.routes) {
          const route_ = { [ROUTE]: route.settings.name };
          result.observe(delay, route.estimator.delayMs() / 1000, route_);
          const tail = route.tail.stats();
          if (tail.count === 0) continue;
          for (const [statistic, ms] of [
            ['p50', tail.p50],
            ['p95', tail.p95],
            ['p99', tail.p99],
            ['p99.9', tail.p999],
            ['max', tail.max],
          ] as const) {
            result.observe(latency, ms / 1000, { ...route_, 'tailcut.statistic': statistic });
          }
          result.observe(cv, tail.cv, route_);
          result.observe(amplification, tail.tailAmplification, route_);
          if (route.settings.sloMs !== undefined) result.observe(slowRate, tail.slowRate, route_);
        }
      },
      [delay, tokens, latency, cv, amplification, slowRate],
    );
  }

  /** Starts the INTERNAL span of a call (`tailcut <route>`), child of the active context. */
  startCall(route: RouteState, method: string): CallTrace {
    const parent = context.active();
    const span = this.tracer.startSpan(
      `tailcut ${route.settings.name}`,
      { kind: SpanKind.INTERNAL, attributes: { [ROUTE]: route.settings.name, [METHOD]: method } },
      parent,
    );
    const ctx = span.isRecording() ? trace.setSpan(parent, span) : parent;
    return new CallTrace(this, route, method, span, ctx, performance.now());
  }

  recordHedge(route: RouteState, outcome: HedgeOutcome): void {
    const name = route.settings.name;
    this.hedges.add(
      1,
      this.attrs.get(`h|${name}|${outcome}`, () => ({
        [ROUTE]: name,
        'tailcut.hedge.outcome': outcome,
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
    const key = `a|${name}|${method}|${ctx.kind}|${outcome}|${origin}|${ending.status}|${type}`;
    const attrs = this.attrs.get(key, () => {
      const server = this.server(origin);
      const a: Attributes = {
        [ROUTE]: name,
        [METHOD]: method,
        'tailcut.attempt.kind': ctx.kind,
        'tailcut.attempt.outcome': outcome,
        [SERVER_ADDRESS]: server.address,
        [SERVER_PORT]: server.port,
      };
      if (ending.status !== undefined) a[STATUS] = ending.status;
      if (type !== undefined) a[ERROR_TYPE] = type;
      return a;
    });
    this.attemptDuration.record(seconds, attrs);
  }

  recordCall(route: RouteState, method: string, seconds: number, ending: Ending): void {
    const name = route.settings.name;
    const type = errorType(ending);
    const attrs = this.attrs.get(`c|${name}|${method}|${ending.status}|${type}`, () => {
      const a: Attributes = { [ROUTE]: name, [METHOD]: method };
      if (ending.status !== undefined) a[STATUS] = ending.status;
      if (type !== undefined) a[ERROR_TYPE] = type;
      return a;
    });
    this.requestDuration.record(seconds, attrs);
    if (route.recordCall(seconds * 1000)) {
      this.slow.add(
        1,
        this.attrs.get(`s|${name}`, () => ({ [ROUTE]: name })),
      );
    }
  }

  /** Streaming figures of a call's answer: first byte, gaps between chunks, chunk count. */
  recordFirstByte(route: RouteState, ms: number): void {
    this.firstByte.record(ms / 1000, this.routeAttrs(route));
  }

  recordChunkGap(route: RouteState, ms: number): void {
    this.chunkGap.record(ms / 1000, this.routeAttrs(route));
  }

  recordChunks(route: RouteState, count: number): void {
    this.chunks.record(count, this.routeAttrs(route));
  }

  private routeAttrs(route: RouteState): Attributes {
    const name = route.settings.name;
    return this.attrs.get(`r|${name}`, () => ({ [ROUTE]: name }));
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

/** The telemetry of one call: its span, its attempts' spans, its clock. */
export class CallTrace {
  /** Per attempt index: its span (the call span when not recording) and origin. */
  private readonly attempts: { span: Span; origin: string }[] = [];
  private ended = false;

  constructor(
    private readonly telemetry: Telemetry,
    private readonly route: RouteState,
    private readonly method: string,
    readonly span: Span,
    /** The context with the call span active: parent of the attempt spans. */
    readonly context: Context,
    private readonly startedAt: number,
  ) {}

  /** Starts an attempt's CLIENT span; returns the context to send it in. */
  startAttempt(ctx: AttemptContext, origin: string): Context | undefined {
    if (!this.span.isRecording()) {
      this.attempts[ctx.index] = { span: this.span, origin };
      return undefined;
    }
    const server = this.telemetry.server(origin);
    const span = this.telemetry.tracer.startSpan(
      this.method,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [METHOD]: this.method,
          [SERVER_ADDRESS]: server.address,
          [SERVER_PORT]: server.port,
          'http.request.resend_count': ctx.index,
          'tailcut.attempt.kind': ctx.kind,
          [ROUTE]: this.route.settings.name,
        },
      },
      this.context,
    );
    this.attempts[ctx.index] = { span, origin };
    if (ctx.kind === 'hedge') {
      this.span.addEvent('tailcut.hedge.sent', {
        'http.request.resend_count': ctx.index,
        [SERVER_ADDRESS]: server.address,
        [SERVER_PORT]: server.port,
      });
    }
    return trace.setSpan(this.context, span);
  }

  /** Records an attempt's end (metric) and ends its span, unless it won (ended with the call). */
  endAttempt(ctx: AttemptContext, outcome: AttemptOutcome, ending: Ending): void {
    const a = this.attempts[ctx.index];
    if (a === undefined) return;
    const seconds = (performance.now() - ctx.startedAt) / 1000;
    this.telemetry.recordAttempt(this.route, this.method, ctx, a.origin, outcome, seconds, ending);
    if (a.span === this.span) return;
    a.span.setAttribute('tailcut.attempt.outcome', outcome);
    if (ending.status !== undefined) a.span.setAttribute(STATUS, ending.status);
    const type = errorType(ending);
    if (type !== undefined && outcome === 'failed') {
      a.span.setAttribute(ERROR_TYPE, type);
      a.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    if (outcome !== 'won') a.span.end();
  }

  recordHedge(outcome: HedgeOutcome): void {
    this.telemetry.recordHedge(this.route, outcome);
    if (outcome !== 'sent' && outcome !== 'won' && this.span.isRecording()) {
      this.span.addEvent('tailcut.hedge.denied', { 'tailcut.hedge.outcome': outcome });
    }
  }

  /** Ends the call: its duration metric, the winner's span and the call span. */
  end(winner: AttemptContext | undefined, ending: Ending): void {
    if (this.ended) return;
    this.ended = true;
    this.telemetry.recordCall(
      this.route,
      this.method,
      (performance.now() - this.startedAt) / 1000,
      ending,
    );
    const type = errorType(ending);
    if (winner !== undefined) {
      const a = this.attempts[winner.index];
      if (a !== undefined && a.span !== this.span) {
        if (type !== undefined) a.span.setStatus({ code: SpanStatusCode.ERROR });
        a.span.end();
      }
    }
    if (ending.status !== undefined) this.span.setAttribute(STATUS, ending.status);
    if (type !== undefined) {
      this.span.setAttribute(ERROR_TYPE, type);
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.span.end();
  }
}
