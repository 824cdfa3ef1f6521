/**
 * The packages as a user gets them: pnpm packs tailcut, @tailcut/redis and @tailcut/lab (prepack
 * builds them), npm installs the tarballs into an empty project outside the workspace, a plain
 * .mjs file makes a hedged call there against loopback servers, the lab's CLI runs from its
 * tarball, and publint and are-the-types-wrong check each tarball.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = ['tailcut', 'redis', 'lab'];

/**
 * Whether the packaging check runs: with TAILCUT_PACK_TESTS=1, which `.ci/run` sets in a step of
 * its own after the test suites (its npm install and type checks would take CPU from their
 * timing-sensitive tests). It needs the npm registry, so the README's test command skips it and
 * says so.
 */
const PACK_TESTS = process.env.TAILCUT_PACK_TESTS === '1';
if (!PACK_TESTS)
  console.log('packaging check skipped: .ci/run runs it (TAILCUT_PACK_TESTS=1; needs npm)');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], cwd: string): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function ok(cmd: string, args: string[], cwd: string): Promise<string> {
  const r = await run(cmd, args, cwd);
  if (r.code !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A hedged call as a user writes it: the first replica stalls, the hedge to the second wins. */
const CALL = `import { createServer } from 'node:http';
import { createHedgedFetch } from 'tailcut';

async function replica(name, stallMs) {
  const server = createServer((req, res) => {
    const t = setTimeout(() => res.end(name), stallMs);
    res.on('close', () => clearTimeout(t));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: 'http://127.0.0.1:' + server.address().port };
}
const slow = await replica('slow', 5000);
const fast = await replica('fast', 0);
const hedgedFetch = createHedgedFetch({
  routes: [{ name: 'api', replicas: [slow.origin, fast.origin],
    hedge: { maxAttempts: 2, initialDelayMs: 50 } }],
  budget: { ratio: 0.5, minPerSecond: 10 },
});
const started = performance.now();
const res = await hedgedFetch(slow.origin + '/v1/x');
const body = await res.text();
const ms = performance.now() - started;
const route = hedgedFetch.stats().routes.api;
console.log(JSON.stringify({ body, ms, hedges: route.hedgesSent }));
await hedgedFetch.close();
slow.server.closeAllConnections();
slow.server.close();
fast.server.close();
`;

const REQUIRE = `try { require('tailcut'); console.log('loaded'); } catch (e) { console.log(e.code); }`;

describe.runIf(PACK_TESTS)(
  'packages from their tarballs, in a project outside the workspace',
  () => {
    let work: string;
    let project: string;
    const tarballs: Record<string, string> = {};

    beforeAll(async () => {
      work = mkdtempSync(join(tmpdir(), 'tailcut-pack-'));
      const dest = join(work, 'tarballs');
      for (const name of PACKAGES) {
        await ok(
          'npx',
          ['-y', 'pnpm@12.4.2', 'pack', '--pack-destination', dest],
          join(ROOT, 'packages', name),
        );
      }
      for (const file of readdirSync(dest)) {
        const name = PACKAGES.find(
          (p) => file === `${p === 'tailcut' ? 'tailcut' : `tailcut-${p}`}-0.1.0.tgz`,
        );
        if (name) tarballs[name] = join(dest, file);
      }
      project = join(work, 'project');
      mkdirSync(project);
      writeFileSync(join(project, 'package.json'), '{ "name": "user-project", "private": true }\n');
      await ok(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--loglevel=error',
          ...PACKAGES.map((p) => tarballs[p] as string),
        ],
        project,
      );
    }, 150_000);

    afterAll(() => {
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it('each tarball has dist, README and LICENSE, no tests, and real versions for workspace deps', async () => {
      for (const name of PACKAGES) {
        const list = await ok('tar', ['-tzf', tarballs[name] as string], work);
        expect(list).toContain('package/dist/index.js');
        expect(list).toContain('package/dist/index.d.ts');
        expect(list).toContain('package/README.md');
        expect(list).toContain('package/LICENSE');
        expect(list).not.toMatch(/\/test\/|\.test\.|tsbuildinfo/);
        const manifest = await ok(
          'tar',
          ['-xzOf', tarballs[name] as string, 'package/package.json'],
          work,
        );
        expect(manifest).not.toContain('workspace:');
      }
      // npm took tailcut and @tailcut/redis from the tarballs, not from the registry.
      const installed = JSON.parse(
        readFileSync(join(project, 'node_modules/tailcut/package.json'), 'utf8'),
      ) as { description: string };
      expect(installed.description).toContain('Hedged requests for fetch and undici');
      expect(readdirSync(join(project, 'node_modules/@tailcut'))).toEqual(['lab', 'redis']);
    });

    it('a plain .mjs file makes a hedged call with the installed tailcut; require() is refused', async () => {
      writeFileSync(join(project, 'call.mjs'), CALL);
      const out = JSON.parse(await ok(process.execPath, ['call.mjs'], project)) as {
        body: string;
        ms: number;
        hedges: number;
      };
      expect(out.body).toBe('fast');
      expect(out.hedges).toBe(1);
      expect(out.ms).toBeLessThan(4000);
      writeFileSync(join(project, 'require.cjs'), REQUIRE);
      expect((await ok(process.execPath, ['require.cjs'], project)).trim()).toBe(
        'ERR_PACKAGE_PATH_NOT_EXPORTED',
      );
    }, 30_000);

    it("runs the lab's CLI from its tarball: npx tailcut-lab / npx @tailcut/lab simulate", async () => {
      const lines = Array.from(
        { length: 2000 },
        (_, i) => `${i},${(i % 50 === 0 ? 200 : 20 + (i % 7)).toFixed(1)}`,
      );
      writeFileSync(join(project, 'x.csv'), `index,latency_ms\n${lines.join('\n')}\n`);
      const args = [
        'simulate',
        '--trace',
        'x.csv',
        '--percentiles',
        '95',
        '--budgets',
        '0.05',
        '--calls',
        '2000',
      ];
      const refused = await run('npx', ['tailcut-lab', ...args], project);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('several numeric columns ("index", "latency_ms")');
      const out = await ok('npx', ['@tailcut/lab', ...args, '--column', 'latency_ms'], project);
      expect(out).toContain('<- recommended');
    }, 30_000);

    it('passes publint and are-the-types-wrong (ESM for node16 and bundler; ESM-only)', async () => {
      for (const name of PACKAGES) {
        const tarball = tarballs[name] as string;
        await ok(join(ROOT, 'node_modules/.bin/publint'), ['run', '--strict', tarball], work);
        // --profile esm-only: node16 (from ESM) and bundler must resolve; the CommonJS rows are
        // ignored, since require() is refused by design (ESM-only).
        await ok(
          join(ROOT, 'node_modules/.bin/attw'),
          [tarball, '--profile', 'esm-only', '--format', 'table-flipped'],
          work,
        );
      }
    }, 60_000);
  },
);
