import * as undici from 'undici';
import {
  createHedgedFetch,
  type HedgedFetchOptions,
  type HedgeStats,
  hedge,
} from '../../src/index.js';

/** A hedging client as the shared transport suite drives it. */
export interface Client {
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  stats(): HedgeStats;
  close(): Promise<void>;
}

/** The two transports of the one engine: the fetch wrapper and the undici interceptor. */
export const adapters: {
  name: string;
  fetchOnly: boolean;
  create(o: HedgedFetchOptions): Client;
}[] = [
  {
    name: 'createHedgedFetch',
    fetchOnly: true,
    create(options) {
      const f = createHedgedFetch(options);
      return { fetch: f, stats: () => f.stats(), close: () => f.close() };
    },
  },
  {
    name: 'hedge() interceptor + undici.fetch',
    fetchOnly: false,
    create(options) {
      const interceptor = hedge(options);
      const agent = new undici.Agent().compose(interceptor);
      return {
        fetch: (input, init) =>
          undici.fetch(input as string, {
            ...(init as unknown as undici.RequestInit),
            dispatcher: agent,
          }) as unknown as Promise<Response>,
        stats: () => interceptor.stats(),
        close: () => agent.close(),
      };
    },
  },
];

/**
 * A client of `adapter`, callable as fetch and carrying stats() and close(), registered in
 * `open` so the test closes it.
 */
export function openClient(
  adapter: (typeof adapters)[number],
  options: HedgedFetchOptions,
  open: { close(): Promise<void> }[],
): Client['fetch'] & Client {
  const c = adapter.create(options);
  open.push(c);
  return Object.assign(
    (input: string | URL | Request, init?: RequestInit) => c.fetch(input, init),
    c,
  );
}
