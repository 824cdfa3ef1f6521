import type { Attributes } from '@opentelemetry/api';
import type { Ending } from '../engine/listener.js';

/** Attribute keys (standard where one exists). */
export const ATTR = {
  route: 'tailcut.route',
  method: 'http.request.method',
  status: 'http.response.status_code',
  errorType: 'error.type',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  resendCount: 'http.request.resend_count',
  attemptKind: 'tailcut.attempt.kind',
  attemptOutcome: 'tailcut.attempt.outcome',
  hedgeOutcome: 'tailcut.hedge.outcome',
  replica: 'tailcut.replica',
  statistic: 'tailcut.statistic',
} as const;

/** The attribute sets of a route, made once per distinct combination (bounded cardinality). */
export class AttributeCache {
  private readonly sets = new Map<string, Attributes>();

  get(key: string, make: () => Attributes): Attributes {
    let attrs = this.sets.get(key);
    if (attrs === undefined) {
      attrs = Object.freeze(make());
      if (this.sets.size < 4096) this.sets.set(key, attrs);
    }
    return attrs;
  }
}

/** `error.type` of an ending: the error's code or name, or the status of a failed answer. */
export function errorType(ending: Ending): string | undefined {
  if (ending.error !== undefined) {
    const err = ending.error as { code?: unknown; name?: unknown };
    if (typeof err.code === 'string') return err.code;
    if (typeof err.name === 'string') return err.name;
    return '_OTHER';
  }
  if (ending.status !== undefined && ending.status >= 400) return String(ending.status);
  return undefined;
}
