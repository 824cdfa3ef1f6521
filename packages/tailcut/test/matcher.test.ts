import { describe, expect, it } from 'vitest';
import { compileMatch, routeMatcher } from '../src/routes/matcher.js';

const url = (s: string) => new URL(s);

describe('route matching', () => {
  it('matches exact paths, prefixes and RegExps against the pathname only', () => {
    const exact = compileMatch('m', { path: '/v1/chat' }).test;
    expect(exact('GET', url('http://h/v1/chat?x=1'))).toBe(true);
    expect(exact('GET', url('http://h/v1/chat/x'))).toBe(false);
    const prefix = compileMatch('m', { path: '/v1/*' }).test;
    expect(prefix('GET', url('http://h/v1'))).toBe(true);
    expect(prefix('GET', url('http://h/v1/a/b'))).toBe(true);
    expect(prefix('GET', url('http://h/v10'))).toBe(false);
    const re = compileMatch('m', { path: /^\/models\/[^/]+$/ }).test;
    expect(re('GET', url('http://h/models/gpt'))).toBe(true);
    expect(re('GET', url('http://h/models/gpt/x'))).toBe(false);
  });

  it('matches methods case-insensitively and hosts with or without port', () => {
    const m = compileMatch('m', { method: ['post', 'PUT'], host: 'API.example.com' }).test;
    expect(m('POST', url('http://api.example.com:8080/'))).toBe(true);
    expect(m('GET', url('http://api.example.com/'))).toBe(false);
    const withPort = compileMatch('m', { host: 'api.example.com:8080' }).test;
    expect(withPort('GET', url('http://api.example.com:8080/'))).toBe(true);
    expect(withPort('GET', url('http://api.example.com:9090/'))).toBe(false);
  });

  it('matches everything when match is omitted', () => {
    expect(compileMatch('m', undefined).test('DELETE', url('http://x/y'))).toBe(true);
  });

  it('a route with replicas and no host applies to its replicas only; with a host, to that host', () => {
    const replicas = ['http://10.0.0.1:8000', 'http://10.0.0.2:8000'];
    const byReplica = routeMatcher(compileMatch('m', { path: '/v1/*' }), replicas);
    expect(byReplica('GET', url('http://10.0.0.2:8000/v1/x'))).toBe(true);
    expect(byReplica('GET', url('https://api.other.com/v1/x'))).toBe(false);
    const byHost = routeMatcher(compileMatch('m', { host: 'chat.internal' }), replicas);
    expect(byHost('GET', url('http://chat.internal/v1/x'))).toBe(true);
    expect(byHost('GET', url('http://10.0.0.1:8000/v1/x'))).toBe(false);
    const ownOrigin = routeMatcher(compileMatch('m', undefined), []);
    expect(ownOrigin('GET', url('https://anywhere.example/'))).toBe(true);
  });
});
