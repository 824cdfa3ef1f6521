/**
 * One route over three providers through the official openai SDK: OpenAI-, Azure OpenAI- and
 * vLLM-shaped loopback replicas (examples/cross-provider), each refusing any request not in its
 * own shape. Every call is answered, and each provider sees only its own key: the caller's
 * Authorization, X-Api-Key and Cookie never reach Azure or vLLM.
 */
import { type Provider, startProvider } from '@tailcut/example-cross-provider/providers';
import OpenAI from 'openai';
import { createHedgedFetch, type HedgedFetchOptions, hedge } from 'tailcut';
import * as undici from 'undici';
import { afterEach, describe, expect, it } from 'vitest';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

const KEYS = { openai: 'sk-openai', azure: 'azure-key', vllm: 'vllm-key' };
const VLLM_MODEL = 'meta-llama/Llama-3.1-8B-Instruct';

/** A fetch over `options` by each adapter, closed after the test. */
const adapters: [string, (o: HedgedFetchOptions) => typeof fetch][] = [
  [
    'createHedgedFetch',
    (o) => {
      const f = createHedgedFetch(o);
      open.push(f);
      return f as typeof fetch;
    },
  ],
  [
    'hedge() + undici.fetch',
    (o) => {
      const agent = new undici.Agent();
      open.push(agent);
      const dispatcher = agent.compose(hedge(o));
      return ((input: string, init: undici.RequestInit) =>
        undici.fetch(input, { ...init, dispatcher })) as unknown as typeof fetch;
    },
  ],
];

describe.each(adapters)('%s: the openai SDK over OpenAI, Azure and vLLM shapes', (_, make) => {
  it('answers every call, and each provider sees only its own key', async () => {
    // OpenAI is slow to answer, so every call it takes is hedged to Azure or vLLM.
    const providers: Provider[] = [
      await startProvider('openai', { key: KEYS.openai, model: 'gpt-4o-mini', ttftMs: () => 300 }),
      await startProvider('azure', { key: KEYS.azure, model: 'dep-mini' }),
      await startProvider('vllm', { key: KEYS.vllm, model: VLLM_MODEL }),
    ];
    open.push(...providers);
    const [oa, az, vl] = providers as [Provider, Provider, Provider];
    const f = make({
      routes: [
        {
          name: 'chat',
          match: { method: 'POST', path: '/v1/chat/completions' },
          replicas: [
            { origin: oa.origin, name: 'openai' },
            {
              origin: az.origin,
              name: 'azure',
              path: '/openai/deployments/dep-mini/chat/completions',
              query: { 'api-version': '2024-10-21' },
              headers: { authorization: null, 'api-key': KEYS.azure },
              json: { model: 'dep-mini' },
              hedgeOnly: true,
            },
            {
              origin: vl.origin,
              name: 'vllm',
              headers: { authorization: `Bearer ${KEYS.vllm}` },
              json: { model: VLLM_MODEL },
            },
          ],
          idempotent: true,
          hedge: { initialDelayMs: 30, minSamples: 1_000_000, maxAttempts: 3 },
        },
      ],
    });
    const client = new OpenAI({
      apiKey: KEYS.openai,
      baseURL: `${oa.origin}/v1`,
      fetch: f,
      maxRetries: 0,
      defaultHeaders: { cookie: 'session=caller', 'x-api-key': 'caller-x' },
    });
    const answers: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hi' }],
      });
      answers.push(r.choices[0]?.message.content ?? '');
    }
    expect(answers.every((a) => a.startsWith('Hello from '))).toBe(true);
    // Every provider was tried and none refused a request: each got its own shape.
    for (const p of providers) {
      expect(p.seen.length, p.kind).toBeGreaterThan(0);
      expect(
        p.seen.filter((s) => s.status !== 200),
        p.kind,
      ).toEqual([]);
    }
    for (const s of oa.seen) {
      expect(s).toMatchObject({ authorization: `Bearer ${KEYS.openai}`, apiKey: undefined });
      expect(s.model).toBe('gpt-4o-mini');
    }
    for (const s of az.seen) {
      expect(s).toMatchObject({
        authorization: undefined,
        apiKey: KEYS.azure,
        xApiKey: undefined,
        cookie: undefined,
        model: 'dep-mini',
      });
      expect(s.url).toBe('/openai/deployments/dep-mini/chat/completions?api-version=2024-10-21');
    }
    for (const s of vl.seen) {
      expect(s).toMatchObject({
        authorization: `Bearer ${KEYS.vllm}`,
        apiKey: undefined,
        xApiKey: undefined,
        cookie: undefined,
        model: VLLM_MODEL,
      });
    }
  });
});
