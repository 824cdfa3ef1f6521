import { createHash } from 'node:crypto';
import { createClient } from 'redis';
import type { RedisClientLike } from './options.js';

/** The budget's view of a Redis connection: raw commands and Lua scripts. */
export interface RedisLink {
  /** Sends one command; rejects at once when the connection is down (own connections). */
  command(args: readonly string[]): Promise<unknown>;
  /** Runs a Lua script with no KEYS (EVALSHA, falling back to EVAL after a restart: NOSCRIPT). */
  script(script: LuaScript, args: readonly string[]): Promise<unknown>;
  /**
   * Resolves once the connection is ready or its first attempt failed (a refused connection
   * need not wait out a deadline); at once for a client passed in.
   */
  ready: Promise<void>;
  /**
   * Closes the connection if the budget opened it, waiting at most `ms` for replies still due
   * before destroying it; a client passed in is left open.
   */
  close(ms: number): Promise<void>;
}

/** A Lua script and its SHA-1. */
export interface LuaScript {
  source: string;
  sha: string;
}

/** A script with its SHA-1 computed once. */
export function luaScript(source: string): LuaScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

function linkOver(
  send: (args: readonly string[]) => Promise<unknown>,
  close: (ms: number) => Promise<void>,
  ready: Promise<void> = Promise.resolve(),
): RedisLink {
  return {
    ready,
    command: send,
    async script(script, args) {
      try {
        return await send(['EVALSHA', script.sha, '0', ...args]);
      } catch (error) {
        if (!String((error as Error)?.message ?? error).startsWith('NOSCRIPT')) throw error;
        return send(['EVAL', script.source, '0', ...args]);
      }
    },
    close,
  };
}

/** A link over a client the user passed (node-redis: `sendCommand`; ioredis: `call`). */
export function borrowedLink(client: RedisClientLike): RedisLink {
  // ioredis has both `call` and a `sendCommand` of its own (taking a Command object): `call` first.
  if ('call' in client && typeof client.call === 'function') {
    const c = client as { call(command: string, ...args: string[]): Promise<unknown> };
    return linkOver(
      ([command, ...rest]) => c.call(command as string, ...rest),
      async () => {},
    );
  }
  const c = client as { sendCommand(args: readonly string[]): Promise<unknown> };
  return linkOver(
    (args) => c.sendCommand(args),
    async () => {},
  );
}

/**
 * node-redis's `close()` waits for every reply still due, with no deadline: a Redis that hangs
 * would hang it. After `ms` the connection is destroyed (those replies are lost).
 */
async function closeWithin(client: { close(): Promise<unknown>; destroy(): void }, ms: number) {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
  });
  const outcome = await Promise.race([client.close().catch(() => 'late' as const), late]);
  clearTimeout(timer);
  if (outcome === 'late') client.destroy();
}

/**
 * Opens a node-redis connection of the budget's own: no offline queue (a command while
 * disconnected fails at once instead of waiting), reconnecting in the background with a capped
 * backoff, connection errors swallowed (the budget reports them through its mode).
 */
export function ownLink(url: string, timeoutMs: number): RedisLink {
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: Math.max(timeoutMs, 1_000),
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1_000),
    },
  });
  // The last connection error names the cause ("ECONNREFUSED", "ENOTFOUND") better than the
  // command's own "The client is offline".
  let lastError: Error | undefined;
  client.on('error', (error: Error) => {
    lastError = error;
  });
  client.on('ready', () => {
    lastError = undefined;
  });
  const ready = new Promise<void>((resolve) => {
    client.once('ready', () => resolve());
    client.once('error', () => resolve());
  });
  client.connect().catch(() => {});
  let closed: Promise<void> | undefined;
  return linkOver(
    (args) =>
      client.isReady || lastError === undefined
        ? client.sendCommand(args as string[])
        : Promise.reject(new Error(`not connected: ${lastError.message}`, { cause: lastError })),
    (ms) => {
      closed ??= client.isOpen ? closeWithin(client, ms) : Promise.resolve(client.destroy());
      return closed;
    },
    ready,
  );
}
