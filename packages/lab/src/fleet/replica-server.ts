/**
 * The lab's replica fleet, run in a child process so that the client's event loop does not
 * distort it. argv[2] is the JSON of { replicas, profile, seed }. It reports its origins over
 * IPC, answers { stats } and { reset } messages, and counts what it does:
 * started / finished / aborted attempts, replica-ms spent on aborted work, and how long after a
 * call's first answer each of its other attempts was aborted (calls are tagged x-lab-call).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rng } from '../random.js';
import { drawLatency, type Profile } from './profile.js';

interface Config {
  replicas: number;
  profile: Profile;
  seed: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as Config;
const { profile } = config;
const random = rng(config.seed);

let epoch = performance.now();
const counters = {
  started: 0,
  finished: 0,
  aborted: 0,
  overloaded: 0,
  abortedWorkMs: 0,
  /** ms between a call's first answer and each later abort of its other attempts. */
  abortLagMs: [] as number[],
  perReplica: [] as number[],
};
/** First answer time per call id (pruned as it grows). */
const answered = new Map<string, number>();
const pendingAborts = new Map<string, number[]>();

function reset(): void {
  epoch = performance.now();
  Object.assign(counters, {
    started: 0,
    finished: 0,
    aborted: 0,
    overloaded: 0,
    abortedWorkMs: 0,
    abortLagMs: [],
    perReplica: counters.perReplica.map(() => 0),
  });
  answered.clear();
  pendingAborts.clear();
}

function noteAnswer(call: string | undefined, at: number): void {
  if (call === undefined || answered.has(call)) return;
  answered.set(call, at);
  for (const abortAt of pendingAborts.get(call) ?? []) counters.abortLagMs.push(abortAt - at);
  pendingAborts.delete(call);
  if (answered.size > 200_000) answered.clear();
}

function noteAbort(call: string | undefined, at: number): void {
  if (call === undefined) return;
  const first = answered.get(call);
  if (first !== undefined) counters.abortLagMs.push(at - first);
  else pendingAborts.set(call, [...(pendingAborts.get(call) ?? []), at]);
}

/** A replica: optional FIFO queue with `concurrency` slots, then its service time. */
function replica(index: number) {
  const queue: (() => void)[] = [];
  let busy = 0;
  const slots = profile.concurrency ?? Number.POSITIVE_INFINITY;
  const release = () => {
    busy--;
    const next = queue.shift();
    if (next) next();
  };
  return (req: IncomingMessage, res: ServerResponse) => {
    const call = req.headers['x-lab-call'] as string | undefined;
    const arrived = performance.now();
    counters.started++;
    counters.perReplica[index] = (counters.perReplica[index] ?? 0) + 1;
    if (profile.overloadProbability !== undefined && random() < profile.overloadProbability) {
      counters.overloaded++;
      res.writeHead(profile.overloadStatus ?? 503, { 'retry-after': '1' });
      res.end('overloaded');
      return;
    }
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const serve = () => {
      if (res.destroyed && !profile.ignoreAborts) {
        release();
        return;
      }
      if (profile.mode === 'sse' && !res.headersSent) {
        // Like inference servers: 200 and the provider's early events at once, then the model
        // thinks (time to first token).
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(earlyEvents(profile.flavour));
      }
      const service = drawLatency(profile, random, index, performance.now() - epoch);
      timer = setTimeout(() => answer(service), service);
    };
    const answer = (service: number) => {
      if (profile.mode === 'sse') return stream(service);
      finish();
      if (!res.destroyed) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ replica: index, serviceMs: service }));
      }
    };
    const stream = (_ttft: number) => {
      if (res.destroyed) return finish();
      noteAnswer(call, performance.now());
      let sent = 0;
      const tokens = profile.tokens ?? 20;
      const tick = () => {
        if (res.destroyed) return finish();
        res.write(tokenEvent(profile.flavour, `t${sent} `));
        if (++sent >= tokens) {
          res.end(lastEvent(profile.flavour));
          finish();
        } else timer = setTimeout(tick, profile.tokenGapMs ?? 5);
      };
      tick();
    };
    const finish = () => {
      if (done) return;
      done = true;
      counters.finished++;
      if (profile.mode !== 'sse') noteAnswer(call, performance.now());
      if (slots !== Number.POSITIVE_INFINITY) release();
    };
    res.on('close', () => {
      if (done || res.writableFinished) return;
      const now = performance.now();
      counters.aborted++;
      counters.abortedWorkMs += now - arrived;
      noteAbort(call, now);
      if (!profile.ignoreAborts) {
        if (timer) clearTimeout(timer);
        if (!done) {
          done = true;
          if (slots !== Number.POSITIVE_INFINITY && timer !== undefined) release();
        }
      }
    });
    if (busy < slots) {
      busy++;
      serve();
    } else
      queue.push(() => {
        busy++;
        serve();
      });
  };
}

/** What each provider sends before its first token. */
function earlyEvents(flavour: Profile['flavour']): string {
  if (flavour === 'anthropic') {
    return (
      sseEvent('message_start', {
        type: 'message_start',
        message: { id: 'msg_lab', content: [] },
      }) +
      sseEvent('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      }) +
      sseEvent('ping', { type: 'ping' })
    );
  }
  const role = {
    id: 'chatcmpl-lab',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { role: 'assistant', content: '' } }],
  };
  return `: processing\n\ndata: ${JSON.stringify(role)}\n\n`;
}

function tokenEvent(flavour: Profile['flavour'], text: string): string {
  if (flavour === 'anthropic') {
    return sseEvent('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    });
  }
  const chunk = {
    id: 'chatcmpl-lab',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content: text } }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

function lastEvent(flavour: Profile['flavour']): string {
  return flavour === 'anthropic'
    ? sseEvent('message_stop', { type: 'message_stop' })
    : 'data: [DONE]\n\n';
}

function sseEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

const origins: string[] = [];
for (let i = 0; i < config.replicas; i++) {
  const server = createServer(replica(i));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origins.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
}
counters.perReplica = origins.map(() => 0);
process.send?.({ origins });
process.on('message', (m: { stats?: boolean; reset?: boolean }) => {
  if (m.reset) {
    reset();
    process.send?.({ reset: true });
  }
  if (m.stats) process.send?.({ stats: counters });
});
