/**
 * One route, three providers: the openai SDK calls "OpenAI", and tailcut hedges a slow first
 * token to an Azure OpenAI deployment or a self-hosted vLLM, each with its own path, query,
 * key and model name. Three local stand-ins (see providers.ts) refuse any request not in their
 * own shape, and record the keys they see.
 *
 * The run streams the same calls twice, side by side: once straight to the OpenAI replica
 * (the SDK's own fetch), once through tailcut over the three, and prints the time to first
 * token of each, the hedges, which provider won, and which keys each provider saw.
 *
 *   node examples/cross-provider/dist/main.js [calls]
 */
import OpenAI from 'openai';
import { createHedgedFetch } from 'tailcut';
import { type Provider, startProvider } from './providers.js';

const CALLS = Number(process.argv[2] ?? 300);
const CONCURRENCY = 10;

/** A seeded random source (mulberry32), so runs are comparable. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Time to first token: lognormal around `medianMs` (σ 0.3), and 4% of calls stall ×12. */
function ttft(medianMs: number, seed: number): (n: number) => number {
  const r = random(seed);
  return () => {
    const normal = Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
    const ms = medianMs * Math.exp(0.3 * normal);
    return r() < 0.04 ? ms * 12 : ms;
  };
}

const openaiKey = 'sk-openai-local';
const azureKey = 'azure-local-key';
const vllmKey = 'vllm-local-key';
const providers: Provider[] = [
  await startProvider('openai', { key: openaiKey, model: 'gpt-4o-mini', ttftMs: ttft(60, 1) }),
  await startProvider('azure', { key: azureKey, model: 'dep-mini', ttftMs: ttft(70, 2) }),
  await startProvider('vllm', {
    key: vllmKey,
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    ttftMs: ttft(50, 3),
  }),
];
const [openaiReplica, azure, vllm] = providers as [Provider, Provider, Provider];

// The README's configuration: the caller speaks OpenAI; each other provider gets its own shape.
const hedgedFetch = createHedgedFetch({
  routes: [
    {
      name: 'chat',
      match: { method: 'POST', path: '/v1/chat/completions' },
      replicas: [
        { origin: openaiReplica.origin, name: 'openai' },
        {
          origin: azure.origin,
          name: 'azure',
          path: '/openai/deployments/dep-mini/chat/completions',
          query: { 'api-version': '2024-10-21' },
          headers: { 'api-key': azureKey }, // its own key: the caller's Authorization is dropped
          json: { model: 'dep-mini' },
          hedgeOnly: true, // a pricier provider: only for hedges
        },
        {
          origin: vllm.origin,
          name: 'vllm',
          headers: { authorization: `Bearer ${vllmKey}` },
          json: { model: 'meta-llama/Llama-3.1-8B-Instruct' },
        },
      ],
      idempotent: true,
      commitOn: 'first-token',
      hedge: { percentile: 90, initialDelayMs: 150, minSamples: 20 },
    },
  ],
  budget: { ratio: 0.1, minPerSecond: 2 },
});

/** Streams `CALLS` completions, `CONCURRENCY` at a time; returns their times to first token. */
async function run(client: OpenAI): Promise<number[]> {
  const out: number[] = [];
  const one = async () => {
    const started = performance.now();
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    let first = true;
    for await (const chunk of stream) {
      if (first && chunk.choices[0]?.delta.content) {
        out.push(performance.now() - started);
        first = false;
      }
    }
  };
  for (let i = 0; i < CALLS; i += CONCURRENCY) {
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, CALLS - i) }, one));
  }
  return out.sort((a, b) => a - b);
}

const at = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
const line = (name: string, s: number[]) =>
  `${name.padEnd(34)} p50 ${at(s, 50).toFixed(0).padStart(4)} ms   p90 ${at(s, 90).toFixed(0).padStart(4)} ms   p99 ${at(s, 99).toFixed(0).padStart(5)} ms   max ${(s.at(-1) ?? 0).toFixed(0).padStart(5)} ms`;

const baseURL = `${openaiReplica.origin}/v1`;
const bare = await run(new OpenAI({ apiKey: openaiKey, baseURL, maxRetries: 0 }));
const hedged = await run(
  new OpenAI({ apiKey: openaiKey, baseURL, fetch: hedgedFetch, maxRetries: 0 }),
);

console.log(`\n${CALLS} streamed chat completions, ${CONCURRENCY} at a time, time to first token:`);
console.log(line('openai only (SDK fetch)', bare));
console.log(line('tailcut over openai/azure/vllm', hedged));
console.log(`p99: ${(at(bare, 99) / at(hedged, 99)).toFixed(1)}x lower with tailcut`);
const s = hedgedFetch.stats().routes.chat;
console.log(
  `hedges sent ${s?.hedgesSent} (${(((s?.hedgesSent ?? 0) / CALLS) * 100).toFixed(1)}% of calls), won ${s?.hedgesWon}`,
);
for (const [name, r] of Object.entries(s?.replicas ?? {})) {
  console.log(`  ${name.padEnd(7)} attempts ${r.attempts}, won ${r.won}, failed ${r.failed}`);
}
for (const p of providers) {
  const keys = new Set(p.seen.map((x) => x.authorization ?? x.apiKey ?? '(none)'));
  const refused = p.seen.filter((x) => x.status !== 200).length;
  console.log(`${p.kind} saw keys: ${[...keys].join(', ')}; refused ${refused} requests`);
}
await hedgedFetch.close();
await Promise.all(providers.map((p) => p.close()));
