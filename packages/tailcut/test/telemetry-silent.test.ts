import { createNoopMeter, ProxyTracerProvider } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import type { Hedger } from '../src/engine/hedger.js';
import type { RouteState } from '../src/engine/route-state.js';
import { CallTrace } from '../src/telemetry/call-trace.js';
import { Telemetry } from '../src/telemetry/telemetry.js';

/** The engine is read only by the gauges' callback, which these tests never trigger. */
const hedger = {} as Hedger;
const route = { settings: { name: 'r' } } as RouteState;
const noopMeters = { getMeter: () => createNoopMeter() };

describe('telemetry without an SDK', () => {
  it('makes nothing per call: one shared no-op listener', () => {
    const telemetry = new Telemetry(hedger, noopMeters, new ProxyTracerProvider());
    const a = telemetry.callStarted(route, 'GET');
    expect(a).not.toBeInstanceOf(CallTrace);
    expect(telemetry.callStarted(route, 'GET')).toBe(a);
  });

  it('traces once a tracer provider is registered behind the global proxy, even after the client was made', () => {
    const proxy = new ProxyTracerProvider();
    const telemetry = new Telemetry(hedger, noopMeters, proxy);
    expect(telemetry.callStarted(route, 'GET')).not.toBeInstanceOf(CallTrace);
    proxy.setDelegate(new BasicTracerProvider());
    expect(telemetry.callStarted(route, 'GET')).toBeInstanceOf(CallTrace);
  });

  it('records calls when a real meter is there, whatever the tracer', () => {
    const telemetry = new Telemetry(hedger, new MeterProvider(), new ProxyTracerProvider());
    expect(telemetry.callStarted(route, 'GET')).toBeInstanceOf(CallTrace);
  });
});
