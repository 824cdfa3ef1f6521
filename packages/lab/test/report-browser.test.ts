/**
 * The HTML report in a real browser: Playwright (playwright-core, which downloads nothing)
 * driving Debian's `chromium`. A short `tailcut-lab run` writes the report; the page must render
 * with no console error, hold one solid (measured) and one dashed (theory) series per strategy,
 * and keep every label inside its plot.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshReportPath } from '../src/report/file.js';

const CHROMIUM = '/usr/bin/chromium';
/**
 * Whether the browser test runs: when Debian's chromium is installed, and always in CI
 * (`.ci/run` installs it; a missing browser must fail there, not skip).
 */
const BROWSER_TESTS = existsSync(CHROMIUM) || process.env.CI !== undefined;
if (!BROWSER_TESTS)
  console.log(`report browser test skipped: ${CHROMIUM} is missing (apt-get install chromium)`);

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

function lab(cwd: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI, ...args], { cwd }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
    );
  });
}

describe('report file names', () => {
  it('keeps an earlier report: the next free name, unless forced', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tailcut-names-'));
    const first = join(dir, 'lab-report.html');
    expect(freshReportPath(first, false)).toBe(first);
    writeFileSync(first, 'earlier');
    expect(freshReportPath(first, false)).toBe(join(dir, 'lab-report-2.html'));
    writeFileSync(join(dir, 'lab-report-2.html'), 'earlier');
    expect(freshReportPath(first, false)).toBe(join(dir, 'lab-report-3.html'));
    expect(freshReportPath(first, true)).toBe(first);
  });
});

describe.runIf(BROWSER_TESTS)('the HTML report in chromium', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tailcut-report-'));
  let browser: BrowserContext;
  let stdout: string;

  beforeAll(async () => {
    // An earlier report in the way: the run must keep it and say where it wrote instead.
    writeFileSync(join(dir, 'lab-report.html'), 'an earlier report');
    stdout = await lab(
      dir,
      'run',
      '--seconds',
      '1',
      '--rate',
      '50',
      // Seed 2: the measured tail stays under 100 ms while the theory's reaches ~500 ms.
      '--seed',
      '2',
      '--strategies',
      'none,tailcut',
    );
    // A fresh profile (--user-data-dir) each run: Playwright takes it as launchPersistentContext's
    // first argument.
    browser = await chromium.launchPersistentContext(
      mkdtempSync(join(tmpdir(), 'tailcut-chromium-')),
      {
        executablePath: CHROMIUM,
        viewport: { width: 1000, height: 900 },
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      },
    );
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('run writes a fresh file beside an earlier report and names it', () => {
    expect(stdout).toContain(
      `report: ${join(dir, 'lab-report-2.html')} (lab-report.html exists: kept; --force overwrites it)`,
    );
    expect(readFileSync(join(dir, 'lab-report.html'), 'utf8')).toBe('an earlier report');
  });

  it('renders: the series, no console error, no label cut, a screenshot', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(pathToFileURL(join(dir, 'lab-report-2.html')).href);

    const plot = page.locator('#percentile-plot');
    await expect(plot.isVisible()).resolves.toBe(true);
    const series = await plot.locator('path[data-series]').evaluateAll((paths) =>
      paths.map((p) => ({
        series: p.getAttribute('data-series'),
        strategy: p.getAttribute('data-strategy'),
        dashed: p.getAttribute('stroke-dasharray') !== null,
        // The drawn length: a series that is there but empty (NaN points) would be ~0.
        length: (p as unknown as { getTotalLength(): number }).getTotalLength(),
      })),
    );
    const strategies = ['no hedging', 'tailcut (p95, budget)'];
    for (const strategy of strategies) {
      const mine = series.filter((s) => s.strategy === strategy);
      expect(mine.map((s) => [s.series, s.dashed])).toEqual([
        ['measured', false],
        ['theory', true],
      ]);
      for (const s of mine) expect(s.length).toBeGreaterThan(100);
    }
    expect(series).toHaveLength(2 * strategies.length);

    // Every series within the plot area: the y axis covers theory and measurement alike (the
    // theory line was drawn above the frame), and the clip is only a guard.
    const area = await plot.locator('#plot-area rect').evaluate((r) => ({
      x: Number(r.getAttribute('x')),
      y: Number(r.getAttribute('y')),
      w: Number(r.getAttribute('width')),
      h: Number(r.getAttribute('height')),
    }));
    const outside = await plot.locator('path[data-series]').evaluateAll(
      (paths, a) =>
        paths
          .map((p) => ({
            p,
            b: (
              p as unknown as {
                getBBox(): { x: number; y: number; width: number; height: number };
              }
            ).getBBox(),
          }))
          .filter(
            ({ b }) =>
              b.x < a.x - 0.5 ||
              b.y < a.y - 0.5 ||
              b.x + b.width > a.x + a.w + 0.5 ||
              b.y + b.height > a.y + a.h + 0.5,
          )
          .map(
            ({ p, b }) =>
              `${p.getAttribute('data-series')} ${p.getAttribute('data-strategy')}: y ${b.y.toFixed(0)}..${(b.y + b.height).toFixed(0)}`,
          ),
      area,
    );
    expect(outside).toEqual([]);
    expect(
      await plot
        .locator('path[data-series]')
        .evaluateAll((paths) =>
          paths.every((p) => p.closest('g')?.getAttribute('clip-path') === 'url(#plot-area)'),
        ),
    ).toBe(true);
    await expect(page.locator('#timeline-plot').isVisible()).resolves.toBe(true);

    // Every label inside its plot's viewport (the x axis' "99.99%" was cut at the right edge).
    const cut = await page.locator('svg').evaluateAll((svgs) =>
      svgs.flatMap((svg) => {
        const box = svg.getBoundingClientRect();
        return [...svg.querySelectorAll('text')]
          .map((t) => ({ text: t.textContent, r: t.getBoundingClientRect() }))
          .filter(
            ({ r }) =>
              r.left < box.left || r.right > box.right || r.top < box.top || r.bottom > box.bottom,
          )
          .map(({ text }) => `${svg.id}: ${text}`);
      }),
    );
    expect(cut).toEqual([]);
    const labels = await plot.locator('text').allTextContents();
    expect(labels).toContain('99.99%');
    await expect(page.locator('#timeline-plot text').allTextContents()).resolves.toContain(
      'seconds since measurement started (negative: warm-up)',
    );
    // The wide tables scroll in their own boxes: the page itself never scrolls sideways.
    type Box = { scrollWidth: number; clientWidth: number };
    const html = await page.locator('html').evaluate((e) => {
      const { scrollWidth, clientWidth } = e as unknown as Box;
      return { scrollWidth, clientWidth };
    });
    const pre = await page
      .locator('.scroll pre')
      .evaluate((e) => (e as unknown as Box).scrollWidth);
    const widths = { page: html.scrollWidth, view: html.clientWidth, pre };
    expect(widths.page).toBeLessThanOrEqual(widths.view);
    expect(widths.pre).toBeGreaterThan(widths.view);

    const png = join(dir, 'report.png');
    await page.screenshot({ path: png, fullPage: true });
    expect(readFileSync(png).subarray(1, 4).toString()).toBe('PNG');
    expect(errors).toEqual([]);
    await page.close();
  });
});
