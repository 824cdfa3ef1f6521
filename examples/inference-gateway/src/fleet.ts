import { createServer, type Server, type ServerResponse } from 'node:http';
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
 * An OpenAI-style stream: headers and a role-only delta at once (not a token), the first token
 * after `ttftMs`, then four more 5 ms apart.
 */
function stream(res: ServerResponse, ttftMs: number): void {
  const chunk = (delta: object) =>
    `data: ${JSON.stringify({ object: 'chat.completion.chunk', model: 'fake-chat', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(chunk({ role: 'assistant', content: '' }));
  let token = 0;
  let timer = setTimeout(function next() {
    res.write(chunk({ content: `token${token} ` }));
    if (++token === 5) {
      res.end('data: [DONE]\n\n');
      return;
    }
    timer = setTimeout(next, 5);
  }, ttftMs);
  res.on('close', () => clearTimeout(timer));
}

/**
 * A fake OpenAI-compatible replica on 127.0.0.1: POST /v1/chat/completions and
 * POST /v1/embeddings answer JSON after a latency drawn from the profile; a chat call with
 * `"stream": true` answers a stream whose first token comes after that latency.
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
      if (
        req.url?.startsWith('/v1/chat/completions') &&
        Buffer.concat(chunks).includes('"stream":true')
      ) {
        stream(res, latency());
        return;
      }
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
