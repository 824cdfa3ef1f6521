/**
 * One variant of the overhead benchmark, alone in its process (so that no other variant's code
 * shares its JIT state). Driven over IPC by overhead.ts: `{ run: n }` runs n calls open loop
 * and answers CPU µs per call and throughput; `{ heap: n }` parks n calls on the server and
 * answers the heap bytes each holds; `{ profile: n }` runs n calls under the CPU profiler and
 * answers the self time per call by component.
 *
 * argv: variant, origin, and optionally the path of another build of tailcut (its
 * `dist/index.js`) for the `-before` variants.
 */
import { Session } from 'node:inspector/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { RouteOptions } from 'tailcut';
import * as tailcut from 'tailcut';
import * as undici7 from 'undici';

const [variant = '', origin = '', before] = process.argv.slice(2);
/**
 * The undici the variants use: the lab's own (7), or another one named by TAILCUT_BENCH_UNDICI
 * (the path of its index.js: undici 8 under Node 22, say). createHedgedFetch's fetch is always
 * tailcut's own undici 7; with another undici its attempts go through that undici's Agent.
 */
const other = process.env.TAILCUT_BENCH_UNDICI;
const undici = (other === undefined ? undici7 : await import(other)) as typeof undici7;
const { createHedgedFetch, hedge } = (
  variant.endsWith('-before') && before !== undefined ? await import(before) : tailcut
) as typeof tailcut;

/** Hedging configured on every path, but the delay is never reached. */
const neverFiring: RouteOptions = {
  name: 'bench',
  match: { path: '/*' },
  hedge: { initialDelayMs: 600_000, minDelayMs: 600_000, maxDelayMs: 600_000 },
};

type Handler = undici7.Dispatcher.DispatchHandler;
type Controller = undici7.Dispatcher.DispatchController;

/**
 * The least an interceptor on undici 7's handler API can do: forward every callback. Its cost
 * is the floor for any such interceptor (undici converts between the handler APIs around it).
 */
class PassThrough implements Handler {
  constructor(private readonly next: Handler) {}
  onRequestStart(c: Controller, context: unknown) {
    this.next.onRequestStart?.(c, context);
  }
  onResponseStart(
    c: Controller,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    message?: string,
  ) {
    this.next.onResponseStart?.(c, status, headers, message);
  }
  onResponseData(c: Controller, chunk: Buffer) {
    this.next.onResponseData?.(c, chunk);
  }
  onResponseEnd(c: Controller, trailers: Record<string, string | string[] | undefined>) {
    this.next.onResponseEnd?.(c, trailers);
  }
  onResponseError(c: Controller, error: Error) {
    this.next.onResponseError?.(c, error);
  }
}

/**
 * Registers the OpenTelemetry SDK's meter and tracer providers globally, as an application that
 * exports metrics and traces does (nothing is exported here: the readers are never collected,
 * the spans go nowhere), so the `-otel` variants measure tailcut's recording itself.
 */
async function installOtelSdk(): Promise<void> {
  const api = await import('@opentelemetry/api');
  const { MeterProvider, MetricReader } = await import('@opentelemetry/sdk-metrics');
  const { BasicTracerProvider } = await import('@opentelemetry/sdk-trace-base');
  class NeverCollected extends MetricReader {
    protected async onShutdown() {}
    protected async onForceFlush() {}
  }
  api.metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new NeverCollected()] }));
  api.trace.setGlobalTracerProvider(new BasicTracerProvider());
}

async function makeCall(): Promise<(path: string) => Promise<void>> {
  if (variant.endsWith('-otel')) await installOtelSdk();
  const request = (dispatcher: undici7.Dispatcher) => async (path: string) => {
    const res = await undici.request(origin + path, { dispatcher });
    await res.body.text();
  };
  switch (variant) {
    case 'request-bare':
      return request(new undici.Agent());
    case 'request-passthrough':
      return request(
        new undici.Agent().compose((dispatch) => (opts, h) => dispatch(opts, new PassThrough(h))),
      );
    case 'request-hedge':
    case 'request-hedge-before':
    case 'request-hedge-otel':
      return request(new undici.Agent().compose(hedge({ routes: [neverFiring] })));
    case 'fetch-bare':
    case 'fetch-passthrough': {
      const agent = new undici.Agent();
      const dispatcher =
        variant === 'fetch-bare'
          ? agent
          : agent.compose((dispatch) => (opts, h) => dispatch(opts, new PassThrough(h)));
      return async (path) => {
        await (await undici.fetch(origin + path, { dispatcher })).text();
      };
    }
    case 'fetch-hedge':
    case 'fetch-hedge-before':
    case 'fetch-hedge-otel': {
      const hedgedFetch = createHedgedFetch({
        routes: [neverFiring],
        ...(other === undefined ? {} : { dispatcher: new undici.Agent() }),
      });
      return async (path) => {
        await (await hedgedFetch(origin + path)).text();
      };
    }
    default:
      throw new Error(`unknown variant ${variant}`);
  }
}

const call = await makeCall();
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * Sends `n` calls open loop at `rate` per second (a call starts at its time whether or not the
 * previous ones finished), so that every variant is measured at the same load: closed-loop CPU
 * per call would also measure how a slower variant batches differently on the event loop.
 */
async function run(n: number, rate: number) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(call('/x'));
  }
  await Promise.all(pending);
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { cpuUsPerCall: (used.user + used.system) / n, callsPerSecond: n / seconds };
}

async function heap(n: number) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const parked = Array.from({ length: n }, () => call('/hold'));
  await new Promise<void>((resolve) => {
    const onMessage = (m: { parked?: boolean }) => {
      if (m.parked) {
        process.off('message', onMessage);
        resolve();
      }
    };
    process.on('message', onMessage);
    process.send?.({ parking: n });
  });
  gc();
  const during = process.memoryUsage().heapUsed;
  process.send?.({ release: true });
  await Promise.all(parked);
  return { heapBytesPerInFlightCall: (during - before) / n };
}

/** Where a profiled function's self time goes, by its script. */
function componentOf(url: string, functionName: string): string {
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return '';
  if (/[/\\]tailcut[/\\](packages[/\\]tailcut[/\\])?dist[/\\]transport[/\\]/.test(url))
    return 'tailcut: transport (interceptor, attempt handlers, fetch adapter)';
  if (/[/\\]dist[/\\]telemetry[/\\]/.test(url) && url.includes('tailcut'))
    return 'tailcut: telemetry';
  if (url.includes('tailcut') && url.includes('dist'))
    return 'tailcut: engine (race, call, estimator, budget, picker, routes)';
  if (url.includes('/undici/')) return 'undici';
  if (url.includes('@opentelemetry')) return 'OpenTelemetry SDK';
  if (url.startsWith('node:') || url === '')
    return 'Node.js and V8 (streams, sockets, timers, promises)';
  return 'other';
}

/** Runs `n` calls under the CPU profiler; self time per call (µs) by component. */
async function profile(n: number, rate: number): Promise<Record<string, number>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  await run(n, rate);
  const { profile: p } = await session.post('Profiler.stop');
  session.disconnect();
  const byId = new Map(p.nodes.map((node) => [node.id, node]));
  const deltas = p.timeDeltas ?? [];
  const out: Record<string, number> = {};
  (p.samples ?? []).forEach((id, i) => {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) return;
    const component = componentOf(frame.url, frame.functionName);
    if (component === '') return;
    out[component] = (out[component] ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0) / n;
  });
  return out;
}

process.on(
  'message',
  async (m: { run?: number; rate?: number; heap?: number; profile?: number }) => {
    if (m.run !== undefined) process.send?.({ result: await run(m.run, m.rate ?? 1000) });
    if (m.profile !== undefined)
      process.send?.({ result: await profile(m.profile, m.rate ?? 1000) });
    if (m.heap !== undefined) process.send?.({ result: await heap(m.heap) });
  },
);
process.send?.({ ready: true });
