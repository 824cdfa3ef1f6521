/** One line of a panel: a label and its points (unix seconds, value). */
export interface Series {
  label: string;
  points: [number, number][];
}

const COLORS = [
  '#73bf69',
  '#f2cc0c',
  '#ff7383',
  '#8ab8ff',
  '#ff9830',
  '#b877d9',
  '#5794f2',
  '#fade2a',
];

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * Renders a dashboard panel's data as an SVG line chart, y on a log scale (latency), with a
 * legend: enough for a person to see what the panel shows without a Grafana.
 */
export function renderPanelSvg(title: string, series: Series[], unit = 'ms', scale = 1000): string {
  const width = 900;
  const height = 420;
  const left = 70;
  const right = 20;
  const top = 40;
  const bottom = 110;
  const all = series.flatMap((s) => s.points).filter(([, v]) => Number.isFinite(v) && v > 0);
  if (all.length === 0) throw new Error('renderPanelSvg: no data to draw');
  const t0 = Math.min(...all.map(([t]) => t));
  const t1 = Math.max(...all.map(([t]) => t));
  const lo = Math.log10(Math.min(...all.map(([, v]) => v * scale)));
  const hi = Math.log10(Math.max(...all.map(([, v]) => v * scale)));
  const yMin = Math.floor(lo);
  const yMax = Math.max(yMin + 1, Math.ceil(hi));
  const x = (t: number) => left + ((t - t0) / Math.max(1, t1 - t0)) * (width - left - right);
  const y = (v: number) =>
    top + (1 - (Math.log10(v * scale) - yMin) / (yMax - yMin)) * (height - top - bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<title>${esc(title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#111217"/>`,
    `<text x="${left}" y="24" fill="#d8d9da" font-size="15">${esc(title)}</text>`,
  ];
  for (let e = yMin; e <= yMax; e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (Math.log10(v) > yMax) continue;
      const yy = y(v / scale);
      out.push(`<line x1="${left}" x2="${width - right}" y1="${yy}" y2="${yy}" stroke="#2c2e33"/>`);
      out.push(
        `<text x="${left - 6}" y="${yy + 4}" fill="#8e8e8e" text-anchor="end">${v} ${unit}</text>`,
      );
    }
  }
  const span = t1 - t0;
  for (let k = 0; k <= 4; k++) {
    const t = t0 + (span * k) / 4;
    out.push(
      `<text x="${x(t)}" y="${height - bottom + 18}" fill="#8e8e8e" text-anchor="middle">+${Math.round(t - t0)} s</text>`,
    );
  }
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = s.points.filter(([, v]) => Number.isFinite(v) && v > 0);
    if (pts.length > 0) {
      const d = pts
        .map(([t, v], j) => `${j === 0 ? 'M' : 'L'}${x(t).toFixed(1)},${y(v).toFixed(1)}`)
        .join('');
      out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`);
    }
    const last = pts.at(-1)?.[1];
    const lx = left + (i % 3) * 280;
    const ly = height - bottom + 45 + Math.floor(i / 3) * 20;
    out.push(`<rect x="${lx}" y="${ly - 9}" width="14" height="4" fill="${color}"/>`);
    out.push(
      `<text x="${lx + 20}" y="${ly - 3}" fill="#d8d9da">${esc(s.label)}${last === undefined ? '' : `  last ${(last * scale).toFixed(1)} ${unit}`}</text>`,
    );
  });
  out.push('</svg>');
  return out.join('\n');
}
