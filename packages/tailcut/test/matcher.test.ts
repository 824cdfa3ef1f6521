import { describe, expect, it } from 'vitest';
import { compileMatch } from '../src/routes/matcher.js';

const url = (s: string) => new URL(s);

describe('route matching', () => {
  it('matches exact paths, prefixes and RegExps against the pathname only', () => {
    const exact = compileMatch('m', { path: '/v1/chat' });
    expect(exact('GET', url('http://h/v1/chat?x=1'))).toBe(true);
    expect(exact('GET', url('http://h/v1/chat/x'))).toBe(false);
    const prefix = compileMatch('m', { path: '/v1/*' });
    expect(prefix('GET', url('http://h/v1'))).toBe(true);
    expect(prefix('GET', url('http://h/v1/a/b'))).toBe(true);
    expect(prefix('GET', url('http://h/v10'))).toBe(false);
    const re = compileMatch('m', { path: /^\/models\/[^/]+$/ });
    expect(re('GET', url('http://h/models/gpt'))).toBe(true);
    expect(re('GET', url('http://h/models/gpt/x'))).toBe(false);
  });

  it('matches methods case-insensitively and hosts with or without port', () => {
    const m = compileMatch('m', { method: ['post', 'PUT'], host: 'API.example.com' });
    expect(m('POST', url('http://api.example.com:8080/'))).toBe(true);
    expect(m('GET', url('http://api.example.com/'))).toBe(false);
    const withPort = compileMatch('m', { host: 'api.example.com:8080' });
    expect(withPort('GET', url('http://api.example.com:8080/'))).toBe(true);
    expect(withPort('GET', url('http://api.example.com:9090/'))).toBe(false);
  });

  it('matches everything when match is omitted', () => {
    expect(compileMatch('m', undefined)('DELETE', url('http://x/y'))).toBe(true);
  });
});
