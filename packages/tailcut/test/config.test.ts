import { describe, expect, it } from 'vitest';
import { createBudget, createHedgedFetch, TailcutError } from '../src/index.js';

const base = { name: 'r', match: { path: '/v1/*' } };

/** [what, options, option named in the message, value shown in the message] */
const bad: [string, unknown, string, string][] = [
  ['options not an object', null, 'options', 'null'],
  ['unknown client option', { routes: [], budgte: {} }, 'options.budgte', '{}'],
  ['routes missing', {}, 'routes', 'undefined'],
  ['route without name', { routes: [{ match: {} }] }, 'routes[0].name', 'undefined'],
  ['duplicate route names', { routes: [base, base] }, 'routes[1].name', '"r"'],
  ['unknown route option', { routes: [{ ...base, hedges: {} }] }, 'routes[0].hedges', '{}'],
  [
    'percentile 0',
    { routes: [{ ...base, hedge: { percentile: 0 } }] },
    'routes[0].hedge.percentile',
    '0',
  ],
  [
    'percentile 100',
    { routes: [{ ...base, hedge: { percentile: 100 } }] },
    'routes[0].hedge.percentile',
    '100',
  ],
  [
    'percentile NaN',
    { routes: [{ ...base, hedge: { percentile: Number.NaN } }] },
    'routes[0].hedge.percentile',
    'NaN',
  ],
  [
    'percentile string',
    { routes: [{ ...base, hedge: { percentile: '95' } }] },
    'routes[0].hedge.percentile',
    '"95"',
  ],
  [
    'percentile neither a number nor auto',
    { routes: [{ ...base, hedge: { percentile: 'fast' } }] },
    'routes[0].hedge.percentile',
    '"fast"',
  ],
  [
    'maxAttempts 0',
    { routes: [{ ...base, hedge: { maxAttempts: 0 } }] },
    'routes[0].hedge.maxAttempts',
    '0',
  ],
  [
    'maxAttempts 6',
    { routes: [{ ...base, hedge: { maxAttempts: 6 } }] },
    'routes[0].hedge.maxAttempts',
    '6',
  ],
  [
    'maxAttempts 2.5',
    { routes: [{ ...base, hedge: { maxAttempts: 2.5 } }] },
    'routes[0].hedge.maxAttempts',
    '2.5',
  ],
  [
    'negative delay',
    { routes: [{ ...base, hedge: { initialDelayMs: -1 } }] },
    'routes[0].hedge.initialDelayMs',
    '-1',
  ],
  [
    'Infinity delay',
    { routes: [{ ...base, hedge: { maxDelayMs: Number.POSITIVE_INFINITY } }] },
    'routes[0].hedge.maxDelayMs',
    'Infinity',
  ],
  [
    'min > max delay',
    { routes: [{ ...base, hedge: { minDelayMs: 50, maxDelayMs: 10 } }] },
    'routes[0].hedge.minDelayMs',
    '50',
  ],
  [
    'window too short',
    { routes: [{ ...base, hedge: { windowMs: 10 } }] },
    'routes[0].hedge.windowMs',
    '10',
  ],
  [
    'minSamples 0',
    { routes: [{ ...base, hedge: { minSamples: 0 } }] },
    'routes[0].hedge.minSamples',
    '0',
  ],
  ['hedge true', { routes: [{ ...base, hedge: true }] }, 'routes[0].hedge', 'true'],
  ['bad commitOn', { routes: [{ ...base, commitOn: 'body' }] }, 'routes[0].commitOn', '"body"'],
  [
    'idempotent string',
    { routes: [{ ...base, idempotent: 'yes' }] },
    'routes[0].idempotent',
    '"yes"',
  ],
  ['empty replicas', { routes: [{ ...base, replicas: [] }] }, 'routes[0].replicas', 'array(0)'],
  [
    'replica path to another host',
    { routes: [{ ...base, replicas: [{ origin: 'http://10.0.0.1', path: '//evil.example/x' }] }] },
    'routes[0].replicas[0].path',
    '"//evil.example/x"',
  ],
  [
    'ftp replica',
    { routes: [{ ...base, replicas: ['ftp://a'] }] },
    'routes[0].replicas[0]',
    '"ftp://a"',
  ],
  [
    'replica with userinfo',
    { routes: [{ ...base, replicas: ['http://u:p@a'] }] },
    'routes[0].replicas[0]',
    '"http://***@a"',
  ],
  [
    'replica with path',
    { routes: [{ ...base, replicas: ['http://a/v1'] }] },
    'routes[0].replicas[0]',
    '"http://a/v1"',
  ],
  [
    'replica not a URL',
    { routes: [{ ...base, replicas: ['not a url'] }] },
    'routes[0].replicas[0]',
    '"not a url"',
  ],
  [
    'metadata replica',
    { routes: [{ ...base, replicas: ['http://169.254.169.254'] }] },
    'routes[0].replicas[0]',
    '"http://169.254.169.254"',
  ],
  [
    'duplicate replicas',
    { routes: [{ ...base, replicas: ['http://a:80', 'http://a'] }] },
    'routes[0].replicas[1]',
    '"http://a"',
  ],
  ['replica number', { routes: [{ ...base, replicas: [8000] }] }, 'routes[0].replicas[0]', '8000'],
  [
    'replica headers not strings',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', headers: { 'x-api-key': 1 } }] }] },
    'routes[0].replicas[0].headers.x-api-key',
    'a number (value not shown)',
  ],
  [
    'replica header with CRLF',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', headers: { 'x-k': 'a\r\nb' } }] }] },
    'routes[0].replicas[0].headers.x-k',
    'a value of 4 characters (not shown)',
  ],
  [
    'replica header with NUL',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', headers: { 'x-k': 'a\0b' } }] }] },
    'routes[0].replicas[0].headers.x-k',
    'not shown',
  ],
  [
    'replica header not Latin-1',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', headers: { 'x-k': 'ключ' } }] }] },
    'routes[0].replicas[0].headers.x-k',
    'not shown',
  ],
  [
    'replica header pinning the Idempotency-Key',
    {
      routes: [
        { ...base, replicas: [{ origin: 'http://a', headers: { 'Idempotency-Key': 'static' } }] },
      ],
    },
    'routes[0].replicas[0].headers.Idempotency-Key',
    '"Idempotency-Key"',
  ],
  [
    'replica header transfer-encoding',
    {
      routes: [
        { ...base, replicas: [{ origin: 'http://a', headers: { 'transfer-encoding': 'x' } }] },
      ],
    },
    'routes[0].replicas[0].headers.transfer-encoding',
    '"transfer-encoding"',
  ],
  [
    'replica header content-length',
    {
      routes: [{ ...base, replicas: [{ origin: 'http://a', headers: { 'content-length': '1' } }] }],
    },
    'routes[0].replicas[0].headers.content-length',
    '"content-length"',
  ],
  [
    'metadata replica as IPv4-mapped IPv6',
    { routes: [{ ...base, replicas: ['http://[::ffff:169.254.169.254]'] }] },
    'routes[0].replicas[0]',
    'not a link-local or cloud-metadata address',
  ],
  [
    'metadata replica with a trailing dot',
    { routes: [{ ...base, replicas: ['http://metadata.google.internal.'] }] },
    'routes[0].replicas[0]',
    'not a link-local or cloud-metadata address',
  ],
  [
    'replica object without origin',
    { routes: [{ ...base, replicas: [{ headers: {} }] }] },
    'routes[0].replicas[0].origin',
    'undefined',
  ],
  [
    'replica path without slash',
    { routes: [{ ...base, replicas: ['http://b', { origin: 'http://a', path: 'v1/x' }] }] },
    'routes[0].replicas[1].path',
    '"v1/x"',
  ],
  [
    'replica path with a query',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', path: '/x?api-version=1' }] }] },
    'routes[0].replicas[0].path',
    'no query',
  ],
  [
    'replica query value a number',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', query: { v: 1 } }] }] },
    'routes[0].replicas[0].query.v',
    'a number (value not shown)',
  ],
  [
    'replica json not an object',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', json: ['model'] }] }] },
    'routes[0].replicas[0].json',
    'array(1)',
  ],
  [
    'replica json value undefined',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', json: { model: undefined } }] }] },
    'routes[0].replicas[0].json.model',
    'undefined',
  ],
  [
    'replica json value a Date',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', json: { at: new Date(0) } }] }] },
    'routes[0].replicas[0].json.at',
    'a JSON value',
  ],
  [
    'replica header removal of Host',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', headers: { host: null } }] }] },
    'routes[0].replicas[0].headers.host',
    '"host"',
  ],
  [
    'replica names twice',
    {
      routes: [
        {
          ...base,
          replicas: [
            { origin: 'http://a', name: 'p' },
            { origin: 'http://b', name: 'p' },
          ],
        },
      ],
    },
    'routes[0].replicas[1].name',
    '"p"',
  ],
  [
    'replica weight 0',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', weight: 0 }] }] },
    'routes[0].replicas[0].weight',
    '0',
  ],
  [
    'every replica hedge-only',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', hedgeOnly: true }] }] },
    'routes[0].replicas',
    'not `hedgeOnly`',
  ],
  [
    'unknown replica key',
    { routes: [{ ...base, replicas: [{ origin: 'http://a', model: 'x' }] }] },
    'routes[0].replicas[0].model',
    '"x"',
  ],
  [
    'bad method',
    { routes: [{ ...base, match: { method: 'GE T' } }] },
    'routes[0].match.method',
    '"GE T"',
  ],
  ['bad path', { routes: [{ ...base, match: { path: 'v1' } }] }, 'routes[0].match.path', '"v1"'],
  [
    'global RegExp',
    { routes: [{ ...base, match: { path: /x/g } }] },
    'routes[0].match.path',
    '/x/g',
  ],
  [
    'unknown match key',
    { routes: [{ ...base, match: { url: '/' } }] },
    'routes[0].match.url',
    '"/"',
  ],
  ['retryOn 700', { routes: [{ ...base, retryOn: [503, 700] }] }, 'routes[0].retryOn[1]', '700'],
  ['budget ratio 1.5', { routes: [], budget: { ratio: 1.5 } }, 'budget.ratio', '1.5'],
  ['budget ratio -0.1', { routes: [], budget: { ratio: -0.1 } }, 'budget.ratio', '-0.1'],
  [
    'budget minPerSecond NaN',
    { routes: [], budget: { minPerSecond: Number.NaN } },
    'budget.minPerSecond',
    'NaN',
  ],
  ['budget unknown key', { routes: [], budget: { rate: 1 } }, 'budget.rate', '1'],
  ['body cap negative', { routes: [], maxBufferedBodyBytes: -1 }, 'maxBufferedBodyBytes', '-1'],
  ['meterProvider wrong', { routes: [], meterProvider: {} }, 'meterProvider', '{}'],
  ['dispatcher wrong', { routes: [], dispatcher: 'agent' }, 'dispatcher', '"agent"'],
];

describe('configuration validation', () => {
  for (const [what, options, option, value] of bad) {
    it(`rejects ${what}: names ${option} and ${value}`, () => {
      let thrown: unknown;
      try {
        createHedgedFetch(options as never);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(TailcutError);
      const err = thrown as TailcutError;
      expect(err.code).toBe('TAILCUT_INVALID_OPTION');
      expect(err.message).toContain(`\`${option}\``);
      expect(err.message).toContain(value);
    });
  }

  it('accepts the docs/design.md example and a shared budget', async () => {
    const shared = createBudget({ ratio: 0.05, minPerSecond: 10 });
    const f = createHedgedFetch({
      routes: [
        {
          name: 'chat',
          match: { method: 'POST', path: '/v1/chat/completions' },
          replicas: ['http://10.0.0.1:8000', 'http://10.0.0.2:8000'],
          idempotent: true,
          hedge: {
            percentile: 95,
            maxAttempts: 2,
            initialDelayMs: 100,
            minDelayMs: 1,
            maxDelayMs: 30_000,
            windowMs: 30_000,
            minSamples: 20,
          },
          commitOn: 'headers',
        },
      ],
      budget: shared,
    });
    expect(f.stats().routes.chat).toMatchObject({ calls: 0, delayMs: 100, samples: 0 });
    await f.close();
  });

  it('never repeats a secret into an error message (userinfo, header values)', () => {
    const secrets = [
      { routes: [{ ...base, replicas: ['http://u:TOPSECRET@127.0.0.1:1'] }] },
      { routes: [{ ...base, replicas: [new URL('http://u:TOPSECRET@127.0.0.1:1')] }] },
      {
        routes: [
          { ...base, replicas: [{ origin: 'http://a', headers: { k: 'TOPSECRET\r\nx: y' } }] },
        ],
      },
      { routes: [{ ...base, replicas: [{ origin: 'http://a', headers: 'TOPSECRET' }] }] },
      { routes: [{ ...base, replicas: { origin: 'http://a', headers: { k: 'TOPSECRET' } } }] },
      { routes: [{ ...base, replicas: ['http://us er:TOPSECRET@10.0.0.1'] }] },
      { routes: [{ ...base, replicas: ['http://u:p@TOPSECRET@10.0.0.1'] }] },
      { routes: [{ ...base, replicas: ['http://u:TOP#SECRET@10.0.0.1'] }] },
      { routes: [{ ...base, replicas: ['http://10.0.0.1/?api_key=TOPSECRET'] }] },
      { routes: [{ ...base, headers: { authorization: 'Bearer TOPSECRET' } }] },
      {
        routes: [
          { ...base, replicas: [{ origin: 'http://a', header: { authorization: 'TOPSECRET' } }] },
        ],
      },
    ];
    for (const options of secrets) {
      expect(() => createHedgedFetch(options as never)).toThrow(TailcutError);
      try {
        createHedgedFetch(options as never);
      } catch (err) {
        expect((err as Error).message).not.toMatch(/TOPSECRET|TOP#SECRET|SECRET/);
      }
    }
  });

  it('refuses replica headers given as a Headers or a Map, or a name given twice', () => {
    for (const headers of [
      new Headers({ authorization: 'K' }),
      new Map([['authorization', 'K']]),
    ]) {
      expect(() =>
        createHedgedFetch({
          routes: [{ ...base, replicas: [{ origin: 'http://a', headers } as never] }],
        }),
      ).toThrow(/routes\[0\]\.replicas\[0\]\.headers.*plain object/);
    }
    expect(() =>
      createHedgedFetch({
        routes: [
          { ...base, replicas: [{ origin: 'http://a', headers: { 'x-k': 'a', 'X-K': 'b' } }] },
        ],
      }),
    ).toThrow(/headers\.X-K/);
  });

  it('refuses metadata addresses in every IPv6 spelling that reaches IPv4', () => {
    for (const host of [
      '[::ffff:169.254.169.254]',
      '[::169.254.169.254]',
      '[::ffff:0:a9fe:a9fe]',
      '[64:ff9b::169.254.169.254]',
      '[2002:a9fe:a9fe::]',
      '2852039166',
      '0xa9fea9fe',
      'METADATA.google.internal.',
    ]) {
      expect(() =>
        createHedgedFetch({ routes: [{ ...base, replicas: [`http://${host}`] }] }),
      ).toThrow(/link-local or cloud-metadata/);
    }
  });

  it('keeps a route named __proto__ in stats()', async () => {
    const f = createHedgedFetch({ routes: [{ name: '__proto__' }, { name: 'constructor' }] });
    const routes = f.stats().routes;
    expect(Object.keys(routes)).toEqual(['__proto__', 'constructor']);
    const proto = Object.entries(routes).find(([name]) => name === '__proto__')?.[1];
    expect(proto).toMatchObject({ calls: 0 });
    await f.close();
  });

  it('rejects calls after close() with TAILCUT_CLOSED', async () => {
    const f = createHedgedFetch({ routes: [] });
    await f.close();
    await expect(f('http://127.0.0.1:1/')).rejects.toMatchObject({ code: 'TAILCUT_CLOSED' });
  });
});
