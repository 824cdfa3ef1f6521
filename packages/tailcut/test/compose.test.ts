import { describe, expect, it } from 'vitest';
import { attemptHeaders, callHeaders, keyRequest } from '../src/transport/compose.js';

describe('request composition (pure, no sockets)', () => {
  it("adds the call's Idempotency-Key and content type unless the caller set them", () => {
    const add = { idempotencyKey: 'k-1', contentType: 'multipart/form-data; boundary=x' };
    expect(callHeaders({ Accept: 'a' }, add)).toEqual({
      accept: 'a',
      'idempotency-key': 'k-1',
      'content-type': 'multipart/form-data; boundary=x',
    });
    expect(callHeaders(['Idempotency-Key', 'mine', 'Content-Type', 'text/plain'], add)).toEqual({
      'idempotency-key': 'mine',
      'content-type': 'text/plain',
    });
    expect(callHeaders(undefined, { idempotencyKey: undefined, contentType: undefined })).toEqual(
      {},
    );
  });

  it('drops Host off-origin, strips every replica credential name, adds only its own', () => {
    const call = { host: 'a:1', authorization: 'caller', 'api-key': 'caller-key', x: '1' };
    expect(attemptHeaders(call, true, [], undefined)).toEqual(call);
    expect(attemptHeaders(call, false, [], undefined)).toEqual({
      authorization: 'caller',
      'api-key': 'caller-key',
      x: '1',
    });
    expect(attemptHeaders(call, false, ['api-key', 'authorization'], { 'api-key': 'B' })).toEqual({
      'api-key': 'B',
      x: '1',
    });
    // The input is not changed: every attempt composes from the same call headers.
    expect(call['api-key']).toBe('caller-key');
  });

  it('shows key and cost functions the body as text only when it is in memory', () => {
    const opts = { method: 'POST', path: '/v1/x?y=1', headers: { 'X-A': '1' } };
    expect(keyRequest(opts, '{"model":"m"}').text()).toBe('{"model":"m"}');
    expect(keyRequest(opts, new TextEncoder().encode('bytes')).text()).toBe('bytes');
    expect(keyRequest(opts, new URLSearchParams({ a: 'b' })).text()).toBe('a=b');
    const streamed = keyRequest(opts, undefined);
    expect(streamed.text()).toBeUndefined();
    expect(streamed).toMatchObject({ method: 'POST', path: '/v1/x?y=1', headers: { 'x-a': '1' } });
  });
});
