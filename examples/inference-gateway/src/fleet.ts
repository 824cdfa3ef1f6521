import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Latency of a fake inference replica: lognormal body, plus stalls. */
export interface ReplicaProfile {
  medianMs: number;
  sigma: number;
  stallProbability: number;
  stallFactor: number;
}

/** A seeded PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A fake OpenAI-compatible replica on 127.0.0.1: POST /v1/chat/completions and
 * POST /v1/embeddings answer JSON after a latency drawn from the profile.
 */
export async function startFakeReplica(name: string, profile: ReplicaProfile, seed: number) {
  const random = rng(seed);
  const latency = () => {
    const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    const ms = profile.medianMs * Math.exp(profile.sigma * z);
    return random() < profile.stallProbability ? ms * profile.stallFactor : ms;
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const timer = setTimeout(() => {
        const body = req.url?.startsWith('/v1/embeddings')
          ? {
              object: 'list',
              data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2, 0.3] }],
              model: 'fake-embed',
            }
          : {
              id: `chatcmpl-${name}`,
              object: 'chat.completion',
              model: 'fake-chat',
              choices: [
                {
                  index: 0,
                  message: { role: 'assistant', content: `hello from ${name}` },
                  finish_reason: 'stop',
                },
              ],
            };
        res.writeHead(200, { 'content-type': 'application/json', 'x-replica': name });
        res.end(JSON.stringify(body));
      }, latency());
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
