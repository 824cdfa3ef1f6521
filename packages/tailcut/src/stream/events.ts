/**
 * What a streamed event of an inference API means for the race: generated output (the first
 * one decides the race on a `first-token` route), a failure, or neither (comments, pings,
 * keep-alives, role-only or empty deltas, start and progress events).
 */

/** One event of a streamed answer, as the `firstToken` predicate of a route sees it. */
export interface StreamEvent {
  /** `sse` (text/event-stream) or `ndjson` (one JSON object a line). */
  format: 'sse' | 'ndjson';
  /** The SSE `event:` field, if the server set one. */
  event: string | undefined;
  /** The SSE `data:` field, or the NDJSON line. */
  data: string;
}

/** An event's meaning: generated output, a failure, or neither. */
export type EventKind = 'token' | 'error' | 'other';

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nonEmpty(value: unknown): boolean {
  if (typeof value === 'string') return value.length > 0;
  if (Array.isArray(value)) return value.length > 0;
  return isObject(value);
}

/** OpenAI Chat Completions (and compatible gateways): a choice whose delta carries output. */
function chatDelta(choices: unknown[]): boolean {
  for (const choice of choices) {
    if (!isObject(choice)) continue;
    if (nonEmpty(choice.text)) return true; // legacy completions
    const delta = choice.delta;
    if (!isObject(delta)) continue;
    if (
      nonEmpty(delta.content) ||
      nonEmpty(delta.tool_calls) ||
      nonEmpty(delta.function_call) ||
      nonEmpty(delta.refusal) ||
      nonEmpty(delta.reasoning_content) ||
      nonEmpty(delta.reasoning) ||
      nonEmpty(delta.audio)
    ) {
      return true;
    }
  }
  return false;
}

/**
 * Recognises the output events of the known formats: OpenAI Chat Completions (non-empty
 * `delta.content`, `tool_calls`, `refusal`, `reasoning_content`/`reasoning`), the OpenAI
 * Responses API (`response.*.delta`), Anthropic Messages (`content_block_delta`), and
 * Ollama-style NDJSON (`message.content`, `response`). Failures: an `error` event or type, a
 * top-level `error` field, `response.failed`. Anything else is not output.
 */
export function classifyEvent(e: StreamEvent): EventKind {
  if (e.event === 'error') return 'error';
  const data = e.data.trim();
  if (data === '' || data === '[DONE]') return 'other';
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    // Plain text data on an SSE stream: output of some custom format.
    return e.format === 'sse' ? 'token' : 'other';
  }
  if (!isObject(json)) return 'other';
  const type = typeof json.type === 'string' ? json.type : e.event;
  if (type === 'error' || type === 'response.failed' || json.error !== undefined) {
    return json.error === null ? 'other' : 'error';
  }
  if (type === 'content_block_delta') return 'token';
  if (type?.startsWith('response.') && type.endsWith('.delta')) {
    return json.delta === '' ? 'other' : 'token';
  }
  if (Array.isArray(json.choices)) return chatDelta(json.choices) ? 'token' : 'other';
  if (isObject(json.message) && nonEmpty(json.message.content)) return 'token';
  if (isObject(json.message) && nonEmpty(json.message.tool_calls)) return 'token';
  if (nonEmpty(json.response)) return 'token';
  return 'other';
}
