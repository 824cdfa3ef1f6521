import { describe, expect, it } from 'vitest';
import { isTailcutError } from '../src/index.js';
import {
  attemptHeaders,
  attemptPath,
  callHeaders,
  keyRequest,
  parseJsonObject,
  rewriteJson,
} from '../src/transport/compose.js';

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

  it('removes a header a replica sets to null, and the Content-Length of a rewritten body', () => {
    const call = { authorization: 'caller', cookie: 'c=1', 'content-length': '10', x: '1' };
    expect(
      attemptHeaders(call, false, [], { authorization: null, cookie: null, 'api-key': 'k' }, true),
    ).toEqual({ x: '1', 'api-key': 'k' });
  });

  it("rewrites the path and merges the query; the request's query is untouched without one", () => {
    const shape = { where: 'w', path: '/d/chat', query: undefined };
    expect(attemptPath('/v1/chat?a=1&b=%20', shape)).toBe('/d/chat?a=1&b=%20');
    expect(
      attemptPath('/v1/chat?a=1&b=2', { ...shape, query: { b: null, 'api-version': 'v' } }),
    ).toBe('/d/chat?a=1&api-version=v');
    expect(
      attemptPath('/v1/chat?b=1', { where: 'w', path: (p) => `/x${p}`, query: { b: null } }),
    ).toBe('/x/v1/chat');
    // The caller's other parameters stay byte for byte (a signed URL stays valid).
    expect(
      attemptPath('/v1?name=a%20b&flag&sig=x;y&a+b=1', {
        where: 'w',
        path: undefined,
        query: { 'api-version': '2024 10', 'a b': null },
      }),
    ).toBe('/v1?name=a%20b&flag&sig=x;y&api-version=2024+10');
    for (const bad of ['//evil.example/x', '/\\evil.example/x', '/a\\b']) {
      expect(() => attemptPath('/v1', { where: 'w', path: () => bad, query: undefined })).toThrow(
        /not a path starting with one "\/"/,
      );
    }
    let err: unknown;
    try {
      attemptPath('/v1', {
        where: 'route "r", replica "a"',
        path: () => 42 as never,
        query: undefined,
      });
    } catch (e) {
      err = e;
    }
    expect(isTailcutError(err, 'TAILCUT_REWRITE_FAILED')).toBe(true);
    expect((err as Error).message).toContain(
      'route "r", replica "a": its `path` function returned number',
    );
  });

  it('sets top-level fields of a JSON object body, and refuses anything else', () => {
    const parsed = parseJsonObject('{"model":"a","n":1}', 'w');
    expect(new TextDecoder().decode(rewriteJson(parsed, { model: 'b', t: [1] }))).toBe(
      '{"model":"b","n":1,"t":[1]}',
    );
    for (const text of ['[1]', '1', 'null', '{', undefined]) {
      expect(() => parseJsonObject(text, 'w')).toThrow(
        /^tailcut: w: its `json` rewrite needs a JSON object body/,
      );
    }
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
