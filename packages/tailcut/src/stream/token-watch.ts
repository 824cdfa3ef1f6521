import { createParser, type EventSourceParser } from 'eventsource-parser';
import type { EventKind, StreamEvent } from './events.js';

/** What a fed chunk held: output events, and whether a failure event came before any output. */
export interface WatchResult {
  tokens: number;
  error: boolean;
}

/** The stream formats a watch frames, by media type. */
function formatOf(contentType: string | undefined): StreamEvent['format'] | undefined {
  const type = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  if (type === 'text/event-stream') return 'sse';
  if (
    type === 'application/x-ndjson' ||
    type === 'application/ndjson' ||
    type === 'application/jsonl' ||
    type === 'application/jsonlines'
  ) {
    return 'ndjson';
  }
  return undefined;
}

/**
 * Frames a streamed answer into events (SSE with eventsource-parser, or NDJSON lines) as its
 * chunks arrive, and classifies each: it tells the attempt when its first output arrives, and
 * the call each output event after. Bytes are decoded as UTF-8 across chunk boundaries.
 */
export class TokenWatch {
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser | undefined;
  private line = '';
  private result: WatchResult = { tokens: 0, error: false };

  private constructor(
    format: StreamEvent['format'],
    private readonly classify: (event: StreamEvent) => EventKind,
  ) {
    if (format === 'sse') {
      this.parser = createParser({
        onEvent: (m) => this.take({ format: 'sse', event: m.event, data: m.data }),
      });
    }
  }

  /** A watch for an answer of `contentType`, or undefined when it is not a stream it frames. */
  static for(
    contentType: string | undefined,
    classify: (event: StreamEvent) => EventKind,
  ): TokenWatch | undefined {
    const format = formatOf(contentType);
    return format === undefined ? undefined : new TokenWatch(format, classify);
  }

  /** Reads one chunk; returns the output events it completed, and a failure seen before output. */
  feed(chunk: Uint8Array): WatchResult {
    this.result = { tokens: 0, error: false };
    const text = this.decoder.decode(chunk, { stream: true });
    if (this.parser !== undefined) this.parser.feed(text);
    else this.lines(text);
    return this.result;
  }

  private lines(text: string): void {
    let start = 0;
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', start)) {
      const line = this.line + text.slice(start, i);
      this.line = '';
      start = i + 1;
      if (line.trim() !== '') this.take({ format: 'ndjson', event: undefined, data: line });
    }
    this.line += text.slice(start);
  }

  private take(event: StreamEvent): void {
    let kind: EventKind;
    try {
      kind = this.classify(event);
    } catch {
      kind = 'other';
    }
    if (kind === 'token') this.result.tokens++;
    else if (kind === 'error' && this.result.tokens === 0) this.result.error = true;
  }
}
