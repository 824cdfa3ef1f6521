import { type Profile, slowdownAt } from '../fleet/profile.js';
import { quantile, survival } from '../theory.js';
import { PERCENTILES, type Row } from './summary.js';

const COLORS = ['#d62728', '#ff7f0e', '#9467bd', '#2ca02c', '#1f77b4', '#8c564b'];
const esc = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** The opening of a white SVG canvas. */
function svgOpen(w: number, h: number, id: string): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" id="${id}" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="sans-serif" font-size="12">`,
    `<rect width="${w}" height="${h}" fill="white"/>`,
  ];
}

/** An SVG path through the points. */
function line(xy: [number, number][]): string {
  return xy.map(([x, y], j) => `${j ? 'L' : 'M'}${x.toFixed(1)},${y.toFixed(1)}`).join('');
}

/**
 * A percentile plot in HdrHistogram's style: x is the percentile on a "nines" scale
 * (log of 1 / (1 − q)), y the latency on a log scale; solid lines are measured, dashed lines
 * the theory of the same strategy.
 */
export function percentilePlot(rows: Row[], title: string): string {
  const w = 900;
  const h = 480;
  const L = 70;
  // Room for half of the last x label ("99.99%", centred on the axis' end).
  const R = 40;
  const T = 40;
  const B = 60;
  const qs: number[] = [];
  for (let n = 0; n <= 4; n += 0.05) qs.push(1 - 10 ** -n);
  const xOf = (q: number) => L + (Math.log10(1 / (1 - q)) / 4) * (w - L - R);
  // The axis covers both series: the theory's tail can lie far above the measured one.
  const values = rows.flatMap((r) => {
    const s = r.theorySurvival;
    const theory = s ? [quantile(s, 0.5), quantile(s, qs[qs.length - 1] as number)] : [];
    return [r.histogram.getValueAtPercentile(50) / 1000, r.maxMs, ...theory];
  });
  const yMin = Math.floor(Math.log10(Math.max(0.1, Math.min(...values) / 2)));
  const yMax = Math.ceil(Math.log10(Math.max(...values)));
  const yOf = (ms: number) =>
    T + (1 - (Math.log10(Math.max(ms, 10 ** yMin)) - yMin) / (yMax - yMin)) * (h - T - B);
  const out = [
    ...svgOpen(w, h, 'percentile-plot'),
    `<title>${esc(title)}</title>`,
    `<text x="${L}" y="24" font-size="15">${esc(title)}</text>`,
  ];
  for (let e = yMin; e <= yMax; e++) {
    const y = yOf(10 ** e);
    out.push(`<line x1="${L}" x2="${w - R}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${L - 6}" y="${y + 4}" text-anchor="end">${10 ** e} ms</text>`);
  }
  for (const [q, label] of [
    [0, '0%'],
    [0.9, '90%'],
    [0.99, '99%'],
    [0.999, '99.9%'],
    [0.9999, '99.99%'],
  ] as const) {
    const x = xOf(q);
    out.push(`<line x1="${x}" x2="${x}" y1="${T}" y2="${h - B}" stroke="#ddd"/>`);
    out.push(`<text x="${x}" y="${h - B + 16}" text-anchor="middle">${label}</text>`);
  }
  // The series are clipped to the plot area too, in case a value lies beyond the axis' range.
  out.push(
    `<clipPath id="plot-area"><rect x="${L}" y="${T}" width="${w - L - R}" height="${h - T - B}"/></clipPath>`,
    '<g clip-path="url(#plot-area)">',
  );
  const legend: string[] = [];
  rows.forEach((r, i) => {
    const color = COLORS[i % COLORS.length];
    const measured = qs.map((q): [number, number] => [
      xOf(q),
      yOf(r.histogram.getValueAtPercentile(q * 100) / 1000),
    ]);
    const series = `data-strategy="${esc(r.strategy).replace(/"/g, '&quot;')}"`;
    out.push(
      `<path data-series="measured" ${series} d="${line(measured)}" fill="none" stroke="${color}" stroke-width="2"/>`,
    );
    const s = r.theorySurvival;
    if (s) {
      const theory = qs.map((q): [number, number] => [xOf(q), yOf(quantile(s, q))]);
      out.push(
        `<path data-series="theory" ${series} d="${line(theory)}" fill="none" stroke="${color}" stroke-width="1" stroke-dasharray="4 3"/>`,
      );
    }
    legend.push(
      `<rect x="${L + 10}" y="${T + 10 + i * 18}" width="14" height="4" fill="${color}"/>`,
      `<text x="${L + 30}" y="${T + 16 + i * 18}">${esc(r.strategy)}</text>`,
    );
  });
  out.push('</g>', ...legend);
  out.push(
    `<text x="${w - R}" y="${h - 10}" text-anchor="end" fill="#666">solid: measured; dashed: theory</text>`,
  );
  out.push('</svg>');
  return out.join('\n');
}

/** One second of a hedging strategy's run: its delay, and the hedges it sent that second. */
export interface TimelinePoint {
  strategy: string;
  /** Seconds since the measurement (and the fleet's clock) started; negative in the warm-up. */
  second: number;
  delayMs: number;
  hedges: number;
  calls: number;
}

/**
 * The delay over time against the fleet's true percentile (the profile's unhedged quantile ×
 * its slowdown at that time), and the share of calls hedged each second.
 */
export function timelinePlot(
  points: TimelinePoint[],
  profile: Profile,
  percentile: number,
): string {
  const w = 900;
  const h = 420;
  const L = 70;
  const R = 70;
  const T = 40;
  const B = 50;
  const base = quantile(survival(profile), percentile / 100);
  const seconds = points.map((p) => p.second);
  const x0 = Math.min(0, ...seconds);
  const x1 = Math.max(1, ...seconds);
  const xOf = (s: number) => L + ((s - x0) / (x1 - x0)) * (w - L - R);
  const truth = (s: number) => base * slowdownAt(profile, s * 1000);
  const yTop = Math.max(...points.map((p) => p.delayMs), ...seconds.map(truth)) * 1.1;
  const yOf = (ms: number) => T + (1 - ms / yTop) * (h - T - B);
  const shareTop = Math.max(0.1, ...points.map((p) => (p.calls > 0 ? p.hedges / p.calls : 0)));
  const y2Of = (share: number) => T + (1 - share / shareTop) * (h - T - B);
  const out = [
    ...svgOpen(w, h, 'timeline-plot'),
    `<text x="${L}" y="24" font-size="15">Hedge delay over time against the fleet's true p${percentile}, and the share of calls hedged</text>`,
    `<line x1="${L}" x2="${w - R}" y1="${h - B}" y2="${h - B}" stroke="#999"/>`,
  ];
  for (let s = Math.ceil(x0); s <= x1; s++) {
    out.push(`<text x="${xOf(s)}" y="${h - B + 16}" text-anchor="middle">${s}</text>`);
  }
  out.push(
    `<text x="${(L + w - R) / 2}" y="${h - 12}" text-anchor="middle">seconds since measurement started (negative: warm-up)</text>`,
  );
  for (let k = 0; k <= 4; k++) {
    const ms = (yTop * k) / 4;
    out.push(`<text x="${L - 6}" y="${yOf(ms) + 4}" text-anchor="end">${ms.toFixed(0)} ms</text>`);
    out.push(
      `<text x="${w - R + 6}" y="${y2Of((shareTop * k) / 4) + 4}" fill="#2ca02c">${((shareTop * k * 100) / 4).toFixed(0)}%</text>`,
    );
  }
  const fine: [number, number][] = [];
  for (let s = x0; s <= x1; s += (x1 - x0) / 400) fine.push([xOf(s), yOf(truth(s))]);
  out.push(`<path d="${line(fine)}" fill="none" stroke="#000" stroke-dasharray="4 3"/>`);
  const names = [...new Set(points.map((p) => p.strategy))];
  names.forEach((name, i) => {
    const mine = points.filter((p) => p.strategy === name);
    const color = COLORS[(i + 4) % COLORS.length];
    out.push(
      `<path d="${line(mine.map((p) => [xOf(p.second), yOf(p.delayMs)]))}" fill="none" stroke="${color}" stroke-width="2"/>`,
    );
    out.push(
      `<path d="${line(mine.map((p) => [xOf(p.second), y2Of(p.calls > 0 ? p.hedges / p.calls : 0)]))}" fill="none" stroke="#2ca02c" stroke-width="1"/>`,
    );
    out.push(
      `<text x="${L + 10}" y="${T + 16 + i * 18}" fill="${color}">${esc(name)}: delay</text>`,
    );
  });
  out.push(
    `<text x="${w - R}" y="${T + 16}" text-anchor="end">dashed: true p${percentile}; green: hedges ÷ calls</text>`,
  );
  out.push('</svg>');
  return out.join('\n');
}

/** A self-contained HTML report: the plots and the table. */
export function htmlReport(
  title: string,
  rows: Row[],
  tableText: string,
  timeline?: { points: TimelinePoint[]; profile: Profile; percentile: number },
): string {
  const cells = rows
    .map(
      (r) =>
        `<tr><td>${esc(r.strategy)}</td>${r.measured.map((v, i) => `<td>${v.toFixed(1)}${r.theory ? ` <small>(${(r.theory[i] as number).toFixed(1)})</small>` : ''}</td>`).join('')}<td>${(r.extraLoad * 100).toFixed(1)}%</td></tr>`,
    )
    .join('');
  return `<!doctype html><meta charset="utf-8"><title>${esc(title)}</title>
<style>body{font-family:sans-serif;margin:2em}td,th{padding:4px 10px;text-align:right}td:first-child{text-align:left}.scroll{overflow-x:auto;max-width:100%}</style>
<h1>${esc(title)}</h1>
${percentilePlot(rows, 'Latency by percentile (log scales)')}
${timeline && timeline.points.length > 0 ? timelinePlot(timeline.points, timeline.profile, timeline.percentile) : ''}
<div class="scroll"><table><tr><th>strategy</th>${PERCENTILES.map((p) => `<th>p${p} ms</th>`).join('')}<th>extra load</th></tr>${cells}</table></div>
<div class="scroll"><pre>${esc(tableText)}</pre></div>`;
}
