/**
 * Local stand-ins for three LLM providers, each accepting only its own request shape, as the
 * real ones do:
 *
 * - `openai`: `POST /v1/chat/completions`, `Authorization: Bearer <key>`;
 * - `azure`: `POST /openai/deployments/<deployment>/chat/completions?api-version=…`,
 *   `api-key: <key>` (no Authorization), the deployment as the model;
 * - `vllm`: `POST /v1/chat/completions`, `Authorization: Bearer <key>`, its served model name.
 *
 * A request of the wrong shape gets the provider's error (401 wrong key, 404 unknown path or
 * model, 400 missing api-version). Every request's credentials are recorded, so a test can check
 * that each provider saw only its own key. Answers stream (SSE) or not, as asked, after
 * `ttftMs(n)` for the n-th request.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The kinds of provider. */
export type ProviderKind = 'openai' | 'azure' | 'vllm';

/** What a provider saw of one request. */
export interface SeenRequest {
  url: string;
  authorization: string | undefined;
  apiKey: string | undefined;
  xApiKey: string | undefined;
  cookie: string | undefined;
  /** The `model` of the JSON body. */
  model: string | undefined;
  /** The status it answered. */
  status: number;
}

/** Options of {@link startProvider}. */
export interface ProviderOptions {
  /** The API key it accepts. */
  key: string;
  /** The model (vLLM: served model name; Azure: the deployment) it serves. */
  model: string;
  /** Milliseconds before the first token of the n-th request (0-based). */
  ttftMs?: (n: number) => number;
}

/** A running provider. */
export interface Provider {
  kind: ProviderKind;
  origin: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

const AZURE_PATH = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/;

/** The status a provider of `kind` answers a request with (200 when its shape is right). */
function check(
  kind: ProviderKind,
  o: ProviderOptions,
  req: IncomingMessage,
  model: string | undefined,
): number {
  const url = new URL(req.url ?? '/', 'http://x');
  if (req.method !== 'POST') return 405;
  if (kind === 'azure') {
    const m = AZURE_PATH.exec(url.pathname);
    if (m === null || m[1] !== o.model) return 404;
    if (url.searchParams.get('api-version') === null) return 400;
    return req.headers['api-key'] === o.key && req.headers.authorization === undefined ? 200 : 401;
  }
  if (url.pathname !== '/v1/chat/completions') return 404;
  if (req.headers.authorization !== `Bearer ${o.key}`) return 401;
  return kind === 'vllm' && model !== o.model ? 404 : 200;
}

function chunk(content: string, model: string): string {
  const body = {
    id: 'chatcmpl-local',
    object: 'chat.completion.chunk',
    created: 0,
    model,
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

function answer(
  res: ServerResponse,
  kind: ProviderKind,
  model: string,
  stream: boolean,
  ttft: number,
): void {
  const text = `Hello from ${kind}`;
  if (stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
  }
  const timer = setTimeout(() => {
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-local',
          object: 'chat.completion',
          created: 0,
          model,
          choices: [
            { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' },
          ],
        }),
      );
      return;
    }
    res.write(chunk(text, model));
    res.end('data: [DONE]\n\n');
  }, ttft);
  res.on('close', () => clearTimeout(timer));
}

/** Starts a provider of `kind` on 127.0.0.1. */
export async function startProvider(kind: ProviderKind, o: ProviderOptions): Promise<Provider> {
  const seen: SeenRequest[] = [];
  let n = 0;
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      raw += c;
    });
    req.on('end', () => {
      let body: { model?: string; stream?: boolean } = {};
      try {
        body = JSON.parse(raw) as typeof body;
      } catch {
        // Not JSON: the shape check answers it.
      }
      const status = check(kind, o, req, body.model);
      const h = req.headers;
      seen.push({
        url: req.url ?? '',
        authorization: h.authorization,
        apiKey: h['api-key'] as string | undefined,
        xApiKey: h['x-api-key'] as string | undefined,
        cookie: h.cookie,
        model: body.model,
        status,
      });
      const ttft = o.ttftMs?.(n++) ?? 0;
      if (status !== 200) {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `${kind}: request refused`, code: status } }));
        return;
      }
      answer(res, kind, body.model ?? o.model, body.stream === true, ttft);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    kind,
    origin,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
