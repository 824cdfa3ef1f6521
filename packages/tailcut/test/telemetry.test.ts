import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import * as undici from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/engine/index.js';
import { createHedgedFetch, type HedgedFetchOptions, hedge } from '../src/index.js';
import { type Replica, serve, startReplica } from './support/replica.js';
import { waitFor } from './support/wait.js';

class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(() => {
  context.disable();
  propagation.disable();
});

function sdk() {
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  return { reader, meterProvider, exporter, tracerProvider };
}

type Point = DataPoint<unknown> & { attributes: Record<string, unknown> };

async function points(reader: TestReader, name: string): Promise<Point[]> {
  const { resourceMetrics } = (await reader.collect()) as { resourceMetrics: ResourceMetrics };
  return resourceMetrics.scopeMetrics
    .flatMap((s) => s.metrics)
    .filter((m) => m.descriptor.name === name)
    .flatMap((m) => m.dataPoints as Point[]);
}

const sum = (ps: Point[], pick: (p: Point) => number) => ps.reduce((a, p) => a + pick(p), 0);
const histogramCount = (p: Point) => (p.value as Histogram).count;

/** `a` holds every other request until the client gives up on it (only a hedge answers those). */
async function pair(): Promise<[Replica, Replica]> {
  const a = await startReplica('a', (n) => (n % 2 === 0 ? { hold: true } : { delayMs: 2 }));
  const b = await startReplica('b', () => ({ delayMs: 2 }));
  open.push(a, b);
  return [a, b];
}

function client(options: HedgedFetchOptions) {
  const f = createHedgedFetch(options);
  open.push(f);
  return f;
}

describe('telemetry with the OpenTelemetry SDK', () => {
  it('metrics: one request duration per call; attempt and hedge counts match the servers', async () => {
    const [a, b] = await pair();
    const { reader, meterProvider } = sdk();
    // Hedge delays pass only when the test moves the client's clock: a call is hedged exactly
    // when its primary is held, never because a quick answer was late on a busy machine (a
    // hedge the servers might not see before it is cancelled).
    const clock = new VirtualClock();
    const f = client({
      routes: [
        {
          name: 'chat',
          replicas: [a.origin, b.origin],
          hedge: { initialDelayMs: 40, minSamples: 1e6 },
          sloMs: 100,
        },
      ],
      budget: { ratio: 1 },
      meterProvider,
      clock,
    });
    for (let i = 0; i < 8; i++) {
      let done = false;
      const call = f(`${a.origin}/v1/x`).then(async (res) => {
        await res.text();
        done = true;
      });
      await waitFor(() => done || a.holding() > 0, { message: 'the call answered or was held' });
      if (!done) await clock.advance(40); // the held primary is hedged
      await call;
      await waitFor(() => a.holding() === 0, { message: 'the losing primary was cancelled' });
    }
    const served = a.seen.length + b.seen.length;
    const calls = await points(reader, 'tailcut.request.duration');
    expect(sum(calls, histogramCount)).toBe(8);
    expect(calls[0]?.attributes).toMatchObject({
      'tailcut.route': 'chat',
      'http.request.method': 'GET',
      'http.response.status_code': 200,
    });
    const attempts = await points(reader, 'tailcut.attempt.duration');
    expect(sum(attempts, histogramCount)).toBe(served);
    const byOutcome = (o: string) =>
      sum(
        attempts.filter((p) => p.attributes['tailcut.attempt.outcome'] === o),
        histogramCount,
      );
    const stats = f.stats().routes.chat;
    expect(byOutcome('won')).toBe(8);
    expect(byOutcome('lost')).toBe(served - 8);
    const hedges = await points(reader, 'tailcut.hedges');
    const hedgeCount = (o: string) =>
      sum(
        hedges.filter((p) => p.attributes['tailcut.hedge.outcome'] === o),
        (p) => p.value as number,
      );
    expect(hedgeCount('sent')).toBe(served - 8);
    expect(hedgeCount('sent')).toBe(stats?.hedgesSent);
    expect(hedgeCount('won')).toBe(stats?.hedgesWon);
    const won = attempts.find((p) => p.attributes['tailcut.attempt.outcome'] === 'won');
    expect(won?.attributes['server.address']).toBe('127.0.0.1');
    expect(typeof won?.attributes['server.port']).toBe('number');
    // A replica given as an origin is named by it.
    expect([a.origin, b.origin]).toContain(won?.attributes['tailcut.replica']);
    const delay = await points(reader, 'tailcut.hedge.delay');
    expect(delay[0]?.value).toBeCloseTo(0.04, 3);
    expect((await points(reader, 'tailcut.budget.tokens')).length).toBe(1);
    const latency = await points(reader, 'tailcut.request.latency');
    expect(latency.map((p) => p.attributes['tailcut.statistic']).sort()).toEqual(
      ['max', 'p50', 'p95', 'p99', 'p99.9'].sort(),
    );
    expect((await points(reader, 'tailcut.request.tail_amplification')).length).toBe(1);
    expect((await points(reader, 'tailcut.request.slow_rate')).length).toBe(1);
  });

  it('streaming answers: time to first byte, gaps between chunks, chunks per call', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const tick = () => {
        res.write(`data: ${n}\n\n`);
        if (++n < 5) setTimeout(tick, 10);
        else res.end();
      };
      setTimeout(tick, 20);
    });
    open.push(server);
    const origin = server.origin;
    const { reader, meterProvider } = sdk();
    const f = client({ routes: [{ name: 'gen', commitOn: 'first-byte' }], meterProvider });
    for (let i = 0; i < 2; i++) await (await f(`${origin}/v1/chat`)).text();
    const ttfb = await points(reader, 'tailcut.stream.time_to_first_byte');
    expect(sum(ttfb, histogramCount)).toBe(2);
    expect((ttfb[0]?.value as Histogram | undefined)?.min ?? 0).toBeGreaterThan(0.015);
    const chunks = await points(reader, 'tailcut.stream.chunks');
    expect(sum(chunks, histogramCount)).toBe(2);
    const perCall = ((chunks[0]?.value as Histogram | undefined)?.sum ?? 0) / 2;
    const gaps = await points(reader, 'tailcut.stream.chunk_gap');
    expect(sum(gaps, histogramCount)).toBe(2 * (perCall - 1));
    expect(f.stats().routes.gen?.calls).toBe(2);
  });

  it('first-token routes: time to first token, gaps between output events, output events per call', async () => {
    const delta = (content: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Early events at once (not output), then three tokens, each in a chunk of its own.
      res.write(`: processing\n\n${delta('')}`);
      let n = 0;
      const tick = () => {
        res.write(delta(`t${n}`));
        if (++n < 3) setTimeout(tick, 5);
        else res.end('data: [DONE]\n\n');
      };
      setTimeout(tick, 20);
    });
    open.push(server);
    const { reader, meterProvider } = sdk();
    const f = client({ routes: [{ name: 'gen', commitOn: 'first-token' }], meterProvider });
    for (let i = 0; i < 2; i++) await (await f(`${server.origin}/v1/chat`)).text();
    const ttft = await points(reader, 'tailcut.stream.time_to_first_token');
    expect(sum(ttft, histogramCount)).toBe(2);
    // The first token came 20 ms after the early events: TTFT is not the first byte's time.
    expect((ttft[0]?.value as Histogram | undefined)?.min ?? 0).toBeGreaterThan(0.015);
    const tokens = await points(reader, 'tailcut.stream.tokens');
    expect(sum(tokens, (p) => (p.value as Histogram).sum ?? 0)).toBe(6);
    // One gap per chunk carrying output after the first: at most 2 per call (a busy client may
    // read two tokens in one chunk). The gaps themselves: stream-watch test, virtual clock.
    const gaps = await points(reader, 'tailcut.stream.token_gap');
    expect(sum(gaps, histogramCount)).toBeLessThanOrEqual(4);
  });

  it('counts calls slower than the route sloMs', async () => {
    const slow = await startReplica('slow', () => ({ delayMs: 60 }));
    open.push(slow);
    const { reader, meterProvider } = sdk();
    const f = client({ routes: [{ name: 'r', hedge: false, sloMs: 30 }], meterProvider });
    for (let i = 0; i < 3; i++) await (await f(`${slow.origin}/x`)).text();
    const slowPoints = await points(reader, 'tailcut.requests.slow');
    expect(sum(slowPoints, (p) => p.value as number)).toBe(3);
    expect(f.stats().routes.r?.latency.slowRate).toBe(1);
  });

  it('traces: an INTERNAL span per call, a CLIENT span per attempt, trace context in each attempt', async () => {
    const [a, b] = await pair();
    const { exporter, tracerProvider } = sdk();
    const f = client({
      routes: [
        {
          name: 'chat',
          replicas: [
            { origin: a.origin, name: 'east' },
            { origin: b.origin, name: 'west' },
          ],
          hedge: { initialDelayMs: 40, minSamples: 1e6 },
        },
      ],
      tracerProvider,
    });
    await (await f(`${a.origin}/v1/x`)).text();
    const spans = exporter.getFinishedSpans();
    const internal = spans.filter((s) => s.kind === SpanKind.INTERNAL);
    const clients = spans.filter((s) => s.kind === SpanKind.CLIENT);
    expect(internal).toHaveLength(1);
    expect(internal[0]?.name).toBe('tailcut chat');
    expect(clients).toHaveLength(2);
    const callId = internal[0]?.spanContext().spanId;
    for (const c of clients) expect(c.parentSpanContext?.spanId).toBe(callId);
    const byIndex = clients.sort(
      (x, y) =>
        Number(x.attributes['http.request.resend_count']) -
        Number(y.attributes['http.request.resend_count']),
    );
    expect(byIndex.map((c) => c.attributes['tailcut.attempt.kind'])).toEqual(['primary', 'hedge']);
    expect(byIndex.map((c) => c.attributes['tailcut.attempt.outcome'])).toEqual(['lost', 'won']);
    expect(byIndex.map((c) => c.attributes['tailcut.replica'])).toEqual(['east', 'west']);
    expect(internal[0]?.events.map((e) => e.name)).toContain('tailcut.hedge.sent');
    // Each attempt carried its own span's context.
    const sent = [a.seen[0], b.seen[0]].map((s) => String(s?.headers.traceparent));
    expect(sent[0]).toContain(byIndex[0]?.spanContext().spanId);
    expect(sent[1]).toContain(byIndex[1]?.spanContext().spanId);
    expect(sent[0]).toContain(internal[0]?.spanContext().traceId);
  });

  it('no metric and no span for a request that matches no route', async () => {
    const [, a] = await pair(); // the replica that answers every request
    const { reader, meterProvider, exporter, tracerProvider } = sdk();
    const f = client({
      routes: [{ name: 'r', match: { path: '/v1/*' } }],
      meterProvider,
      tracerProvider,
    });
    await (await f(`${a.origin}/other`)).text();
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    expect(await points(reader, 'tailcut.request.duration')).toHaveLength(0);
    expect(await points(reader, 'tailcut.attempt.duration')).toHaveLength(0);
    expect(a.seen[0]?.headers.traceparent).toBeUndefined();
  });

  it('nests @opentelemetry/instrumentation-undici spans under the attempt spans', async () => {
    const [a, b] = await pair();
    const { exporter, tracerProvider } = sdk();
    const instrumentation = new UndiciInstrumentation();
    instrumentation.setTracerProvider(tracerProvider);
    instrumentation.enable();
    try {
      const interceptor = hedge({
        routes: [
          {
            name: 'embed',
            replicas: [a.origin, b.origin],
            hedge: { initialDelayMs: 40, minSamples: 1e6 },
          },
        ],
        tracerProvider,
      });
      const agent = new undici.Agent().compose(interceptor);
      open.push(agent);
      const parent = tracerProvider.getTracer('app').startSpan('handler');
      await context.with(trace.setSpan(context.active(), parent), async () => {
        const res = await undici.request(`${a.origin}/v1/e`, { dispatcher: agent });
        await res.body.text();
      });
      parent.end();
      const spans = exporter.getFinishedSpans();
      const ours = spans.filter((s) => s.instrumentationScope.name === 'tailcut');
      const attemptIds = new Set(
        ours.filter((s) => s.kind === SpanKind.CLIENT).map((s) => s.spanContext().spanId),
      );
      expect(attemptIds.size).toBe(2);
      const undiciSpans = spans.filter((s) => s.instrumentationScope.name.includes('undici'));
      expect(undiciSpans.length).toBe(2);
      for (const s of undiciSpans)
        expect(attemptIds.has(s.parentSpanContext?.spanId ?? '')).toBe(true);
      const call = ours.find((s) => s.kind === SpanKind.INTERNAL);
      expect(call?.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    } finally {
      instrumentation.disable();
    }
  });
});
