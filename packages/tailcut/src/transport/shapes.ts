import type { RouteSettings } from '../config/validate.js';
import type { BufferLimits, PreparedBody } from './body.js';
import { attemptPath, parseJsonObject, rewriteFailed, rewriteJson } from './compose.js';

/**
 * The request of one call as each replica of its route wants it: the target path (with the
 * replica's `path` and `query`) and the body (with its `json` fields). Made once per call,
 * before anything is sent, so a rewrite that cannot be applied fails the call with nothing sent.
 */
export interface CallShapes {
  /** The request target of an attempt to `replica` (-1: the request's own). */
  path(replica: number): string;
  /** The rewritten body of an attempt to `replica`, or undefined: the call's own body. */
  body(replica: number): Uint8Array | undefined;
  /**
   * False when the rewritten bodies did not fit the buffer caps: the call is sent once,
   * unhedged (as a stream body over a cap is).
   */
  replayable: boolean;
  /**
   * For a call whose body could not be held in memory: the replicas that take it as it is (no
   * `json` rewrite). The call is sent once, to one of them.
   */
  primaryAmong?: (replica: number) => boolean;
  /** Returns the rewritten bodies' bytes to the quota. */
  release(): void;
}

/** How replica `i` of a route is named in rewrite errors. */
function where(route: RouteSettings, i: number): string {
  return `route ${JSON.stringify(route.name)}, replica ${JSON.stringify(route.replicas[i]?.name)}`;
}

/** The body's text, when it is in memory as text or bytes; a Blob is read. */
function bodyText(body: unknown): string | undefined | Promise<string> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return new TextDecoder().decode(body);
  if (body instanceof Blob) return body.text();
  return undefined;
}

/**
 * Shapes a call for the replicas of its route, or returns undefined when no replica reshapes
 * requests. `target` is the request's path and query. Throws (or rejects with)
 * `TAILCUT_REWRITE_FAILED` when a path function fails, or a `json` rewrite meets a body that is
 * not a JSON object (or one too large to buffer).
 */
export function shapeCall(
  route: RouteSettings,
  target: string,
  body: PreparedBody,
  limits: BufferLimits,
): CallShapes | Promise<CallShapes> | undefined {
  if (!route.reshapes) return undefined;
  const paths = route.replicas.map((r, i) =>
    r.path === undefined && r.query === undefined
      ? target
      : attemptPath(target, { where: where(route, i), path: r.path, query: r.query }),
  );
  const path = (i: number) => (i < 0 ? target : (paths[i] ?? target));
  if (!route.rewritesJson) {
    return { path, body: () => undefined, replayable: true, release: () => {} };
  }
  const first = route.replicas.findIndex((r) => r.json !== undefined);
  if (!body.replayable) {
    // Over the buffer caps: sent once, as it is, to a replica without a rewrite, if there is one.
    const asItIs = (i: number) => route.replicas[i]?.json === undefined;
    if (route.replicas.some((r, i) => asItIs(i) && !r.hedgeOnly)) {
      return { path, body: () => undefined, replayable: false, primaryAmong: asItIs, release() {} };
    }
    throw rewriteFailed(
      where(route, first),
      'its `json` rewrite needs the body in memory, and the body is larger than `maxBufferedBodyBytes` or the buffer quota `maxTotalBufferedBytes` is in use; every replica of the route that may take the primary rewrites JSON, so the call cannot be sent as it is',
    );
  }
  const source = body.next();
  const text = bodyText(source);
  const shape = (t: string | undefined) =>
    jsonBodies(route, parseJsonObject(t, where(route, first)), path, limits);
  if (text instanceof Promise) return text.then(shape);
  if (text === undefined && source !== undefined) {
    throw rewriteFailed(
      where(route, first),
      `its \`json\` rewrite needs a JSON object body, and the body is a ${Object.prototype.toString.call(source).slice(8, -1)}`,
    );
  }
  return shape(text);
}

/**
 * The rewritten bodies of a JSON call, made at once. Held within the caps when they fit; when
 * they do not, the call is sent once (one attempt, one body), as a stream over a cap is.
 */
function jsonBodies(
  route: RouteSettings,
  parsed: Record<string, unknown>,
  path: (i: number) => string,
  limits: BufferLimits,
): CallShapes {
  const made = route.replicas.map((r) =>
    r.json === undefined ? undefined : rewriteJson(parsed, r.json),
  );
  const size = made.reduce((sum, b) => sum + (b?.byteLength ?? 0), 0);
  const fits = made.every((b) => (b?.byteLength ?? 0) <= limits.perCall) && limits.quota.take(size);
  let held = fits ? size : 0;
  return {
    path,
    body: (i) => (i < 0 ? undefined : made[i]),
    replayable: fits,
    release() {
      limits.quota.give(held);
      held = 0;
    },
  };
}
