import {
  createNoopMeter,
  type MeterProvider,
  ProxyTracerProvider,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type { Hedger } from '../engine/hedger.js';
import { type CallListener, type EngineListener, SILENT } from '../engine/listener.js';
import type { RouteState } from '../engine/route-state.js';
import { ATTR } from './attributes.js';
import { CallTrace } from './call-trace.js';
import { INSTRUMENTS } from './instruments.js';
import { gauge, Recorder } from './recorder.js';

/** The API's own no-op meter class, and the tracer provider a global proxy falls back to. */
const NOOP_METER = createNoopMeter().constructor;
const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * tailcut's telemetry: it observes the engine ({@link EngineListener}), one {@link CallTrace}
 * per call, and reads the engine's state for the gauges (delay, budget, tail figures); it never
 * feeds the engine. The app brings the OpenTelemetry SDK, or passes providers.
 */
export class Telemetry implements EngineListener {
  private readonly recorder: Recorder;
  /** True when the meter is the API's no-op one (no SDK when the client was made: for good). */
  private readonly metricsOff: boolean;
  private readonly tracerProvider: TracerProvider;

  constructor(hedger: Hedger, meterProvider?: MeterProvider, tracerProvider?: TracerProvider) {
    const recorder = new Recorder(meterProvider, tracerProvider);
    this.recorder = recorder;
    this.metricsOff = recorder.meter instanceof NOOP_METER;
    this.tracerProvider = tracerProvider ?? trace.getTracerProvider();
    const meter = recorder.meter;
    const delay = gauge(meter, INSTRUMENTS.delay);
    const tokens = gauge(meter, INSTRUMENTS.tokens);
    const latency = gauge(meter, INSTRUMENTS.latency);
    const cv = gauge(meter, INSTRUMENTS.cv);
    const amplification = gauge(meter, INSTRUMENTS.amplification);
    const slowRate = gauge(meter, INSTRUMENTS.slowRate);
    meter.addBatchObservableCallback(
      (result) => {
        result.observe(tokens, hedger.budget.stats().tokens);
        for (const route of hedger.routes) {
          const route_ = { [ATTR.route]: route.settings.name };
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
            result.observe(latency, ms / 1000, { ...route_, [ATTR.statistic]: statistic });
          }
          result.observe(cv, tail.cv, route_);
          result.observe(amplification, tail.tailAmplification, route_);
          if (route.settings.sloMs !== undefined) result.observe(slowRate, tail.slowRate, route_);
        }
      },
      [delay, tokens, latency, cv, amplification, slowRate],
    );
  }

  /**
   * The call's telemetry. Without an SDK (a no-op meter, and a global tracer with no provider
   * registered yet) it is a shared no-op: no span, no attribute lookup, nothing made per call.
   * The tracer is asked per call, since an app may register its SDK after making the client.
   */
  callStarted(route: RouteState, method: string): CallListener {
    if (this.metricsOff && !this.tracing()) return SILENT;
    return new CallTrace(this.recorder, route, method);
  }

  /** False while spans would not be recorded: the global proxy has no provider behind it. */
  private tracing(): boolean {
    const p = this.tracerProvider;
    return !(p instanceof ProxyTracerProvider) || p.getDelegate() !== NOOP_TRACER_PROVIDER;
  }
}
