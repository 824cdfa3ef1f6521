import { describe, expect, it } from 'vitest';
import { validateClientOptions } from '../src/config/validate.js';
import {
  BUDGET_PORT,
  onOverload,
  RouteState,
  sendRule,
  VirtualClock,
  verdict,
} from '../src/engine/index.js';
import { createBudget } from '../src/index.js';

function route(options: Record<string, unknown> = {}) {
  const clock = new VirtualClock();
  const settings = validateClientOptions({
    routes: [{ name: 'r', replicas: ['http://127.0.0.1:1', 'http://127.0.0.1:2'], ...options }],
  });
  return { clock, state: new RouteState(settings.routes[0] as never, clock) };
}

describe('HTTP policy (engine)', () => {
  it('sends safe methods twice; others only on an idempotent route, with a key', () => {
    const plain = route().state;
    expect(sendRule(plain, 'GET')).toEqual({ hedgeable: true, needsIdempotencyKey: false });
    expect(sendRule(plain, 'POST')).toEqual({ hedgeable: false, needsIdempotencyKey: false });
    const idem = route({ idempotent: true }).state;
    expect(sendRule(idem, 'POST')).toEqual({ hedgeable: true, needsIdempotencyKey: true });
    expect(sendRule(route({ hedge: false }).state, 'GET').hedgeable).toBe(false);
  });

  it('judges statuses: retryable ones, a hedge’s 409, everything else accepted', () => {
    const { state } = route({ retryOn: [503] });
    expect(verdict(state, { status: 503 }, 'primary')).toBe('retry');
    expect(verdict(state, { status: 500 }, 'primary')).toBe('accept');
    expect(verdict(state, { status: 409 }, 'hedge')).toBe('fail');
    expect(verdict(state, { status: 409 }, 'primary')).toBe('accept');
    // A streamed answer that failed before its first output is not an answer.
    expect(verdict(state, { status: 200, streamFailed: true }, 'primary')).toBe('retry');
  });

  it('backs off on overload: 429/503/refused withdraw a token; Retry-After holds a replica', () => {
    const { state, clock } = route();
    const budget = createBudget({ clock })[BUDGET_PORT];
    onOverload(state, budget, 1, { status: 429, retryAfter: '2' }, undefined);
    expect(budget.stats().penalties).toBe(1);
    expect(state.picker.isHeld(1)).toBe(true);
    onOverload(state, budget, 0, undefined, { cause: { code: 'ECONNREFUSED' } });
    expect(budget.stats().penalties).toBe(2);
    onOverload(state, budget, 0, { status: 500 }, undefined);
    expect(budget.stats().penalties).toBe(2);
    clock.runAllSync();
    expect(state.picker.isHeld(0)).toBe(false);
  });
});
