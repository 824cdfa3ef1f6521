// A PNG of a lab HTML report, as Debian's chromium renders it (playwright-core downloads no
// browser): node scripts/report-screenshot.mjs lab-report.html docs/report.png
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const [report, png] = process.argv.slice(2);
if (!report || !png) {
  console.error('usage: node scripts/report-screenshot.mjs REPORT.html OUT.png');
  process.exit(2);
}
const browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'chromium-')), {
  executablePath: '/usr/bin/chromium',
  viewport: { width: 960, height: 600 },
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
});
const page = await browser.newPage();
await page.goto(pathToFileURL(resolve(report)).href);
// The percentile plot: the report's main figure.
await page.locator('#percentile-plot').screenshot({ path: png });
await browser.close();
console.log(`wrote ${png}`);
