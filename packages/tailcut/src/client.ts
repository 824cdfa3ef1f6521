import type { Dispatcher } from 'undici';
import type { HedgedFetchOptions } from './config/options.js';
import { type ClientSettings, validateClientOptions } from './config/validate.js';
import { Hedger } from './engine/hedger.js';
import { Telemetry } from './telemetry/telemetry.js';
import { ByteQuota } from './transport/byte-quota.js';
import { createInterceptor } from './transport/interceptor.js';
import { ConnectionWarmer } from './transport/warm.js';

/** What both adapters are made of: validated settings, the engine, and the interceptor over it. */
export interface Client {
  settings: ClientSettings;
  hedger: Hedger;
  interceptor: Dispatcher.DispatcherComposeInterceptor;
  /** Keeps the replicas' connections of each dispatcher it is composed onto open, if asked. */
  warmer: ConnectionWarmer | undefined;
}

/**
 * The one factory behind createHedgedFetch and hedge(): validates the options (throwing a
 * `TAILCUT_INVALID_OPTION` error that names the option and value), builds the engine on the
 * client's clock with telemetry observing it, and the interceptor that hands it routed calls.
 */
export function createClient(options: HedgedFetchOptions): Client {
  const settings = validateClientOptions(options);
  const hedger = new Hedger(
    settings,
    (h) => new Telemetry(h, settings.meterProvider, settings.tracerProvider),
  );
  const warmer =
    settings.warmConnections === undefined
      ? undefined
      : new ConnectionWarmer(
          [...new Set(settings.routes.flatMap((r) => r.replicas.map((x) => x.origin)))],
          settings.warmConnections,
        );
  const interceptor = createInterceptor(
    hedger,
    {
      perCall: settings.maxBufferedBodyBytes,
      quota: new ByteQuota(settings.maxTotalBufferedBytes),
    },
    warmer,
  );
  return { settings, hedger, interceptor, warmer };
}
