import { hedge } from 'tailcut';
import * as undici from 'undici';
import { startFleet } from '../fleet/fleet.js';
import type { Profile } from '../fleet/profile.js';
import { openLoop } from '../load/open-loop.js';
import { textTable } from '../report/summary.js';
import type { Strategy } from '../strategies.js';

/** Streaming replicas: 200 at once, time to first token lognormal (median 150 ms), 2% stalls ×8. */
export const STREAMING: Profile = {
  medianMs: 150,
  sigma: 0.3,
  stallProbability: 0.02,
  stallFactor: 8,
  mode: 'sse',
  tokens: 10,
  tokenGapMs: 5,
};

/**
 * True once `text` (the answer so far) holds a generated token of the lab's streams (`t0 `…),
 * in either flavour: the client's own view of time to first token, whatever came before it.
 */
function hasToken(text: string): boolean {
  return text.includes('"content":"t') || text.includes('"text":"t');
}

/** A strategy whose call resolves at the first generated token the client reads. */
export function firstToken(
  name: string,
  dispatcher: undici.Dispatcher,
  origins: string[],
  stats?: Strategy['stats'],
): Strategy {
  const strategy: Strategy = {
    name,
    async call(id) {
      const res = await undici.request(`${origins[id % origins.length]}/v1/chat/completions`, {
        dispatcher,
        method: 'POST',
        body: '{"stream":true}',
        headers: { 'x-lab-call': String(id), 'content-type': 'application/json' },
      });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`status ${res.statusCode}`);
      }
      const it = res.body[Symbol.asyncIterator]();
      const decoder = new TextDecoder();
      let text = '';
      while (!hasToken(text)) {
        const r = await it.next();
        if (r.done) throw new Error('the stream ended with no token');
        text += decoder.decode(r.value as Uint8Array, { stream: true });
      }
      // The rest of the stream is read after the first token, off the measured time.
      void (async () => {
        for (;;) if ((await it.next()).done) return;
      })().catch(() => {});
    },
    close: () => dispatcher.close(),
  };
  if (stats) strategy.stats = stats;
  return strategy;
}

const RATE = 100;
const SECONDS = 10;
/** How long `measureInference` takes, s: six streaming runs and two overload runs. */
export const INFERENCE_SECONDS = 6 * (SECONDS + 3 + 0.5) + 2 * (SECONDS + 2 + 0.5) + 3;

function pct(h: { getValueAtPercentile(p: number): number }, p: number): string {
  return (h.getValueAtPercentile(p) / 1000).toFixed(0);
}

/**
 * Two measurements for inference APIs: time to first token without hedging and with tailcut
 * committing on the first byte or on the first token, on streaming fleets that send each
 * provider's early events; and the budget when the fleet answers 429 to 30% of calls.
 */
export async function measureInference(log: (line: string) => void = () => {}): Promise<string> {
  const out: string[] = [];
  const rate = RATE;
  const seconds = SECONDS;
  out.push(
    `Streaming fleets: 3 replicas that send 200 and their provider's early events at once (OpenAI: an SSE comment and a role-only delta; Anthropic: message_start, content_block_start, ping), then the first token after a lognormal TTFT (median 150 ms, sigma 0.3, 2% stalls x8), 10 tokens 5 ms apart; ${rate} calls/s, ${seconds} s measured. TTFT is read by the client: the time to the first generated token, not the first byte.`,
    '',
  );
  const streaming: string[][] = [];
  for (const flavour of ['openai', 'anthropic'] as const) {
    const fleet = await startFleet(3, { ...STREAMING, flavour }, 3);
    const tailcut = (o: string[], commitOn: 'first-byte' | 'first-token') => {
      const i = hedge({
        routes: [
          {
            name: 'chat',
            replicas: o,
            idempotent: true,
            commitOn,
            hedge: { percentile: 95, minSamples: 50, initialDelayMs: 300 },
          },
        ],
      });
      return firstToken(
        `tailcut, commitOn ${commitOn}`,
        new undici.Agent().compose(i),
        [o[0] as string],
        () => i.stats(),
      );
    };
    for (const make of [
      (o: string[]) => firstToken('no hedging', new undici.Agent(), o),
      (o: string[]) => tailcut(o, 'first-byte'),
      (o: string[]) => tailcut(o, 'first-token'),
    ]) {
      await fleet.reset();
      const s = make(fleet.origins);
      log(`inference: ${flavour} ${s.name}`);
      const r = await openLoop(s, {
        rate,
        seconds,
        warmupSeconds: 3,
        onMeasureStart: () => void fleet.reset(),
      });
      await new Promise((x) => setTimeout(x, 300));
      const counts = await fleet.stats();
      streaming.push([
        flavour === 'openai' ? 'OpenAI' : 'Anthropic',
        s.name,
        pct(r.latency, 50),
        pct(r.latency, 99),
        pct(r.latency, 99.9),
        (r.latency.maxValue / 1000).toFixed(0),
        `${((counts.started / r.calls - 1) * 100).toFixed(1)}%`,
      ]);
      await s.close();
    }
    await fleet.stop();
  }
  out.push(
    ...textTable(
      ['flavour', 'strategy', 'TTFT p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'extra load'],
      streaming,
      2,
    ),
    '',
  );
  {
    const profile: Profile = {
      medianMs: 20,
      sigma: 0.3,
      overloadProbability: 0.3,
      overloadStatus: 429,
    };
    const fleet = await startFleet(3, profile, 4);
    out.push(
      `Overloaded fleet: 30% of answers are 429 (Retry-After: 1), the rest lognormal median 20 ms; ${rate} calls/s, ${seconds} s measured. Every column counts the measured seconds only (not the warm-up).`,
      '',
    );
    const overload: string[][] = [];
    const bare = new undici.Agent();
    const i = hedge({
      routes: [{ name: 'api', replicas: fleet.origins, hedge: { percentile: 95, minSamples: 50 } }],
    });
    const hedged = new undici.Agent().compose(i);
    for (const [name, dispatcher, origins] of [
      ['no hedging', bare, fleet.origins],
      ['tailcut (budget 5% + 10/s)', hedged, [fleet.origins[0] as string]],
    ] as const) {
      await fleet.reset();
      let ok = 0;
      const s: Strategy = {
        name,
        async call(id) {
          const res = await undici.request(`${origins[id % origins.length]}/v1/x`, {
            dispatcher,
            headers: { 'x-lab-call': String(id) },
          });
          await res.body.dump();
          if (res.statusCode === 200) ok++;
        },
        close: async () => {},
      };
      log(`inference: 429 ${name}`);
      const hedged = name !== 'no hedging';
      const snapshot = () => {
        const st = hedged ? i.stats() : undefined;
        return {
          ok,
          sent: st?.routes.api?.hedgesSent ?? 0,
          denied: st?.routes.api?.hedgesDeniedBudget ?? 0,
          penalties: st?.budget.penalties ?? 0,
        };
      };
      // The client's counters are since its start; the fleet's since the end of the warm-up.
      let atStart = snapshot();
      const r = await openLoop(s, {
        rate,
        seconds,
        warmupSeconds: 2,
        onMeasureStart: () => {
          atStart = snapshot();
          void fleet.reset();
        },
      });
      await new Promise((x) => setTimeout(x, 300));
      const counts = await fleet.stats();
      const end = snapshot();
      overload.push([
        name,
        `${(((end.ok - atStart.ok) / r.calls) * 100).toFixed(1)}%`,
        `${((counts.started / r.calls - 1) * 100).toFixed(1)}%`,
        String(end.sent - atStart.sent),
        String(end.denied - atStart.denied),
        String(end.penalties - atStart.penalties),
      ]);
    }
    out.push(
      ...textTable(
        [
          'strategy',
          'answered 200',
          'extra load',
          'hedges sent',
          'denied (budget)',
          'budget penalties',
        ],
        overload,
      ),
    );
    await bare.close();
    await hedged.close();
    await fleet.stop();
  }
  return out.join('\n');
}
