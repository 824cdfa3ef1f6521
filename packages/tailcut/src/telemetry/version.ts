import { createRequire } from 'node:module';

/** tailcut's version, as the meter and tracer report it. */
export const VERSION: string = (
  createRequire(import.meta.url)('../../package.json') as { version: string }
).version;
