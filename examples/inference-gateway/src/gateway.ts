/**
 * An inference gateway: a node:http service whose /chat and /embed endpoints call a fleet of
 * replicas through tailcut, with per-route hedging, and export OpenTelemetry metrics in the
 * Prometheus format at /metrics.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createHedgedFetch } from 'tailcut';

/** Options of {@link startGateway}. */
export interface GatewayOptions {
  /** Origins of the inference replicas. */
  replicas: string[];
  /** Port of the gateway (0: any free port). */
  port?: number;
  /** Port of the Prometheus /metrics endpoint (0: any free port). */
  metricsPort?: number;
  /**
   * false: the same routes with `hedge: false` (tailcut measures and exports, never hedges), a
   * baseline to put beside a hedging gateway. Default true.
   */
  hedging?: boolean;
}

/** Listens on 127.0.0.1; rejects with the server's error (EADDRINUSE when the port is taken). */
async function listen(server: Server, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

/** Starts the gateway and its metrics endpoint. */
export async function startGateway(options: GatewayOptions) {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  const [first] = options.replicas;
  if (first === undefined) throw new Error('startGateway: replicas must not be empty');
  const hedging = options.hedging ?? true;

  // Per-route configuration: chat calls are long and costly, embeddings short and cheap.
  const hedgedFetch = createHedgedFetch({
    routes: [
      {
        name: 'chat',
        match: { method: 'POST', path: '/v1/chat/completions' },
        replicas: options.replicas,
        idempotent: true,
        // Streamed calls race on their first token (JSON answers commit as a whole answer).
        commitOn: 'first-token',
        chunkTimeoutMs: 5_000,
        hedge: hedging && { percentile: 95, maxAttempts: 2, initialDelayMs: 200 },
        sloMs: 250,
      },
      {
        name: 'embeddings',
        match: { method: 'POST', path: '/v1/embeddings' },
        replicas: options.replicas,
        idempotent: true,
        hedge: hedging && { percentile: 90, maxAttempts: 3, initialDelayMs: 50 },
        sloMs: 60,
      },
    ],
    budget: { ratio: 0.1, minPerSecond: 5 },
    meterProvider,
  });

  const upstream = async (path: string, body: string, res: ServerResponse) => {
    const answer = await hedgedFetch(first + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    res.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
    });
    if (answer.body) for await (const chunk of answer.body) res.write(chunk);
    res.end();
  };

  const gateway = createServer((req, res) => {
    const route =
      req.url === '/chat' ? '/v1/chat/completions' : req.url === '/embed' ? '/v1/embeddings' : null;
    if (req.method !== 'POST' || route === null) {
      res.writeHead(404).end();
      return;
    }
    readBody(req)
      .then((body) => upstream(route, body, res))
      .catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: String(err) }));
      });
  });
  const metrics = createServer((req, res) => {
    if (req.url === '/metrics') exporter.getMetricsRequestHandler(req, res);
    else res.writeHead(404).end();
  });
  let url: string;
  let metricsUrl: string;
  try {
    url = await listen(gateway, options.port ?? 0);
    metricsUrl = `${await listen(metrics, options.metricsPort ?? 0)}/metrics`;
  } catch (err) {
    // Leave nothing open: the caller gets the error (its `code`, e.g. EADDRINUSE) and exits.
    gateway.close();
    await hedgedFetch.close();
    await meterProvider.shutdown();
    throw err;
  }
  return {
    url,
    metricsUrl,
    stats: () => hedgedFetch.stats(),
    async close() {
      gateway.closeAllConnections();
      metrics.closeAllConnections();
      await Promise.all([
        new Promise((r) => gateway.close(r)),
        new Promise((r) => metrics.close(r)),
      ]);
      await hedgedFetch.close();
      await meterProvider.shutdown();
    },
  };
}

/**
 * Sends open-loop traffic to the gateway: `rate` calls per second, mixed chat (half of it
 * streamed) and embeddings,
 * until `stop()` (or for `seconds`, when given).
 */
export function startLoad(gatewayUrl: string, rate: number) {
  let i = 0;
  const timer = setInterval(() => {
    // A third of the calls are chat, half of them streamed; the rest embeddings.
    const path = i % 3 === 0 ? '/chat' : '/embed';
    const stream = i % 6 === 0;
    i++;
    fetch(gatewayUrl + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake', input: `call ${i}`, stream }),
    })
      .then((r) => r.arrayBuffer())
      .catch(() => {});
  }, 1000 / rate);
  return { stop: () => clearInterval(timer) };
}
