import { fork } from 'node:child_process';
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

/** Latency profile of a fake embedding replica. */
export interface Profile {
  /** Median of the lognormal body, ms. */
  medianMs: number;
  sigma: number;
  /** Share of answers that stall, and how long a stall lasts (ms). */
  stallProbability: number;
  stallMs: number;
}

/** Dimensions of the fake embeddings. */
const DIMENSIONS = 8;

/**
 * A fake embedding replica on loopback: `POST /v1/embeddings` with `{ input }` answers an
 * OpenAI-shaped `{ data: [{ embedding }] }` after a latency drawn from its profile; now and then
 * an answer stalls. A call whose client went away (a cancelled hedge loser) stops its timer.
 */
async function startReplica(profile: Profile, seed: number) {
  const random = rng(seed);
  const draw = () => {
    const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    const base = profile.medianMs * Math.exp(profile.sigma * z);
    return random() < profile.stallProbability ? base + profile.stallMs : base;
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      const { input } = JSON.parse(body) as { input: string };
      const embedding = Array.from(
        { length: DIMENSIONS },
        (_, i) => (input.charCodeAt(i % input.length) % 97) / 97,
      );
      const timer = setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ index: 0, embedding }] }));
      }, draw());
      res.on('close', () => clearTimeout(timer));
    });
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

/**
 * Three replicas in a child process (their own event loop, as real replicas are other
 * machines), each seeded from `seed`: the same seed gives the same latencies. Resolves with
 * their origins and a `close` that ends the process.
 */
export function startFleet(profile: Profile, seed: number) {
  const child = fork(new URL(import.meta.url), ['fleet', JSON.stringify({ profile, seed })], {
    stdio: 'inherit',
  });
  return new Promise<{ origins: string[]; close: () => Promise<void> }>((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (origins) =>
      resolve({
        origins: origins as string[],
        close: () =>
          new Promise<void>((done) => {
            child.once('exit', () => done());
            child.kill();
          }),
      }),
    );
  });
}

// In the child: start the replicas and send their origins to the parent.
if (process.argv[2] === 'fleet' && process.send) {
  const { profile, seed } = JSON.parse(process.argv[3] as string) as {
    profile: Profile;
    seed: number;
  };
  const fleet = await Promise.all([1, 2, 3].map((n) => startReplica(profile, seed * 10 + n)));
  process.send(fleet.map((r) => r.origin));
}
