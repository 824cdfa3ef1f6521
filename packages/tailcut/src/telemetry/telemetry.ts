import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import type { Hedger } from '../engine/hedger.js';
import type { EngineListener } from '../engine/listener.js';
import type { RouteState } from '../engine/route-state.js';
import { ATTR } from './attributes.js';
import { CallTrace } from './call-trace.js';
import { INSTRUMENTS } from './instruments.js';
import { gauge, Recorder } from './recorder.js';

/**
 * tailcut's telemetry: it observes the engine ({@link EngineListener}), one {@link CallTrace}
 * per call, and reads the engine's state for the gauges (delay, budget, tail figures); it never
 * feeds the engine. The app brings the OpenTelemetry SDK, or passes providers.
 */
export class Telemetry implements EngineListener {
  private readonly recorder: Recorder;

  constructor(hedger: Hedger, meterProvider?: MeterProvider, tracerProvider?: TracerProvider) {
    const recorder = new Recorder(meterProvider, tracerProvider);
    this.recorder = recorder;
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

  callStarted(route: RouteState, method: string): CallTrace {
    return new CallTrace(this.recorder, route, method);
  }
}
