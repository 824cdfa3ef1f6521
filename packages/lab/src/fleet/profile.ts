import { normal } from '../random.js';

/**
 * The latency profile of the replicas of a fleet. Every replica draws from the same body
 * distribution; the options add the effects the lab studies.
 */
export interface Profile {
  /** Median of the lognormal body, ms. */
  medianMs: number;
  /** Sigma of the lognormal body. */
  sigma: number;
  /** Share of attempts that stall, and their slow-down factor. */
  stallProbability?: number;
  stallFactor?: number;
  /** Replica index that is slower by `slowReplicaFactor` (one slow replica). */
  slowReplica?: number;
  slowReplicaFactor?: number;
  /** From this many ms after the fleet starts (or is reset), every replica is `correlatedFactor` slower. */
  correlatedFromMs?: number;
  correlatedFactor?: number;
  /** ...until this many ms (then back to normal). Default: for good. */
  correlatedUntilMs?: number;
  /** A cold start: for this many ms after the fleet starts (or is reset), `coldFactor` slower. */
  coldMs?: number;
  coldFactor?: number;
  /** Load-dependent replicas: a FIFO queue with this many requests served at once. */
  concurrency?: number;
  /** Keep serving requests whose client went away (so hedges really add queueing). */
  ignoreAborts?: boolean;
  /** Share of requests answered at once with an overload status and Retry-After. */
  overloadProbability?: number;
  overloadStatus?: 429 | 503;
  /** `json` (default) or streaming (SSE). */
  mode?: 'json' | 'sse';
  /**
   * SSE: whose stream format, with the early events each provider sends before its first token:
   * `openai` (an SSE comment and a role-only delta; default) or `anthropic` (message_start,
   * content_block_start, ping).
   */
  flavour?: 'openai' | 'anthropic';
  /** SSE: tokens per answer and the gap between them, ms (the body latency is time to first token). */
  tokens?: number;
  tokenGapMs?: number;
}

/** docs/design.md's D2: lognormal median 20 ms, sigma 0.4, plus 1% of attempts x10. */
export const D2: Profile = { medianMs: 20, sigma: 0.4, stallProbability: 0.01, stallFactor: 10 };

/** D2, every replica ×3 slower from 5 s to 10 s after the fleet starts: a shift up, then down. */
export const SHIFT: Profile = {
  ...D2,
  correlatedFromMs: 5000,
  correlatedUntilMs: 10_000,
  correlatedFactor: 3,
};

/** D2 with a cold start: the first 2 s ×8 slower (new connections, JIT, cold caches). */
export const COLD: Profile = {
  ...D2,
  coldMs: 2000,
  coldFactor: 8,
};

/** docs/design.md's D3: 99% around 10 ms, 1% around 1 s. */
export const D3: Profile = { medianMs: 10, sigma: 0.2, stallProbability: 0.01, stallFactor: 100 };

/** Draws one attempt's service time (ms) for replica `replica` at `elapsedMs` into the run. */
export function drawLatency(
  profile: Profile,
  random: () => number,
  replica: number,
  elapsedMs: number,
): number {
  let ms = profile.medianMs * Math.exp(profile.sigma * normal(random));
  if (profile.stallProbability !== undefined && random() < profile.stallProbability) {
    ms *= profile.stallFactor ?? 10;
  }
  if (profile.slowReplica === replica) ms *= profile.slowReplicaFactor ?? 3;
  return ms * slowdownAt(profile, elapsedMs);
}

/** How much slower every replica is `elapsedMs` after the fleet starts (shift, cold start). */
export function slowdownAt(profile: Profile, elapsedMs: number): number {
  let factor = 1;
  if (
    profile.correlatedFromMs !== undefined &&
    elapsedMs >= profile.correlatedFromMs &&
    elapsedMs < (profile.correlatedUntilMs ?? Number.POSITIVE_INFINITY)
  ) {
    factor *= profile.correlatedFactor ?? 3;
  }
  if (profile.coldMs !== undefined && elapsedMs < profile.coldMs) factor *= profile.coldFactor ?? 8;
  return factor;
}
