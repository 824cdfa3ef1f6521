/**
 * One variant of the overhead benchmark, alone in its process (so that no other variant's code
 * shares its JIT state). Driven over IPC by overhead.ts: `{ run: n }` runs n calls closed loop
 * and answers CPU µs per call and throughput; `{ heap: n }` parks n calls on the server and
 * answers the heap bytes each holds.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createHedgedFetch, hedge, type RouteOptions } from 'tailcut';
import * as undici from 'undici';

const [variant = '', origin = ''] = process.argv.slice(2);

/** Hedging configured on every path, but the delay is never reached. */
const neverFiring: RouteOptions = {
  name: 'bench',
  match: { path: '/*' },
  hedge: { initialDelayMs: 600_000, minDelayMs: 600_000, maxDelayMs: 600_000 },
};

type Handler = undici.Dispatcher.DispatchHandler;
type Controller = undici.Dispatcher.DispatchController;

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

function makeCall(): (path: string) => Promise<void> {
  const request = (dispatcher: undici.Dispatcher) => async (path: string) => {
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
      return request(new undici.Agent().compose(hedge({ routes: [neverFiring] })));
    case 'fetch-bare': {
      const dispatcher = new undici.Agent();
      return async (path) => {
        await (await undici.fetch(origin + path, { dispatcher })).text();
      };
    }
    case 'fetch-hedge': {
      const hedgedFetch = createHedgedFetch({ routes: [neverFiring] });
      return async (path) => {
        await (await hedgedFetch(origin + path)).text();
      };
    }
    default:
      throw new Error(`unknown variant ${variant}`);
  }
}

const call = makeCall();
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

process.on('message', async (m: { run?: number; rate?: number; heap?: number }) => {
  if (m.run !== undefined) process.send?.({ result: await run(m.run, m.rate ?? 1000) });
  if (m.heap !== undefined) process.send?.({ result: await heap(m.heap) });
});
process.send?.({ ready: true });
