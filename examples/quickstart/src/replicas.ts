import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A seeded PRNG (mulberry32), so every run draws the same latencies. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Latency profile of a local replica. */
export interface Profile {
  /** Median of the lognormal body, ms. */
  medianMs: number;
  sigma: number;
  /** Share of answers that stall, and by how much they are slowed. */
  stallProbability: number;
  stallFactor: number;
}

/** A local replica: answers JSON after a latency drawn from its profile. */
export async function startReplica(name: string, profile: Profile, seed: number) {
  const random = rng(seed);
  const draw = () => {
    const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    const base = profile.medianMs * Math.exp(profile.sigma * z);
    return random() < profile.stallProbability ? base * profile.stallFactor : base;
  };
  const server: Server = createServer((_req, res) => {
    const timer = setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ replica: name }));
    }, draw());
    res.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
