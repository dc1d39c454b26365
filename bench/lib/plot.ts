// A small SVG line plot (no dependencies): series of (x, y) points with a legend, axes with ticks, marked points.
export interface Series {
  name: string;
  color: string;
  points: [number, number][];
  /** Points drawn as larger markers (an operating point), with a label. */
  marks?: { at: [number, number]; label: string }[];
  dashed?: boolean;
}

export interface PlotOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  xMax: number;
  yMax: number;
  width?: number;
  height?: number;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function svgPlot(series: Series[], o: PlotOptions): string {
  const W = o.width ?? 860;
  const H = o.height ?? 480;
  const m = { l: 64, r: 220, t: 40, b: 52 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const sx = (x: number) => m.l + (Math.min(x, o.xMax) / o.xMax) * pw;
  const sy = (y: number) => m.t + ph - (Math.min(y, o.yMax) / o.yMax) * ph;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${m.l}" y="22" font-size="14" font-weight="bold">${esc(o.title)}</text>`,
    `<line x1="${m.l}" y1="${m.t + ph}" x2="${m.l + pw}" y2="${m.t + ph}" stroke="black"/>`,
    `<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${m.t + ph}" stroke="black"/>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const x = (o.xMax * i) / 5;
    const y = (o.yMax * i) / 5;
    out.push(`<line x1="${sx(x)}" y1="${m.t}" x2="${sx(x)}" y2="${m.t + ph}" stroke="#eee"/>`);
    out.push(`<text x="${sx(x)}" y="${m.t + ph + 16}" text-anchor="middle">${Math.round(x)}</text>`);
    out.push(`<line x1="${m.l}" y1="${sy(y)}" x2="${m.l + pw}" y2="${sy(y)}" stroke="#eee"/>`);
    out.push(`<text x="${m.l - 6}" y="${sy(y) + 4}" text-anchor="end">${Math.round(y)}</text>`);
  }
  out.push(`<text x="${m.l + pw / 2}" y="${H - 12}" text-anchor="middle">${esc(o.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`);
  series.forEach((s, k) => {
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)).sort((a, b) => a[0] - b[0]);
    if (pts.length) {
      out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ')}"/>`);
      for (const [x, y] of pts) out.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2.5" fill="${s.color}"/>`);
    }
    for (const mk of s.marks ?? []) {
      const [x, y] = mk.at;
      if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
      out.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="6" fill="none" stroke="${s.color}" stroke-width="2"/>`);
      out.push(`<text x="${(sx(x) + 8).toFixed(1)}" y="${(sy(y) - 8).toFixed(1)}" fill="${s.color}">${esc(mk.label)}</text>`);
    }
    const ly = m.t + 10 + k * 18;
    out.push(`<line x1="${W - m.r + 16}" y1="${ly}" x2="${W - m.r + 40}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    out.push(`<text x="${W - m.r + 46}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}
