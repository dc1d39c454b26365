// Small SVG plots (no dependencies): a line plot of series of (x, y) points with a legend, axes with ticks and marked
// points (linear, or a logarithmic y axis for distribution tails), a bar chart, and the points of an empirical CDF.
export interface Series {
  name: string;
  color: string;
  points: [number, number][];
  /** Points drawn as larger markers (an operating point), with a label. */
  marks?: { at: [number, number]; label: string }[];
  dashed?: boolean;
  /** Draw the line only (no dot at each point): for long series such as a CDF. */
  noDots?: boolean;
}

/** A horizontal (y) or vertical (x) reference line with a label, e.g. a goal. */
export interface RefLine {
  at: number;
  label: string;
  color?: string;
}

export interface PlotOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  xMax: number;
  yMax: number;
  /** Lower ends of the axes (default 0; with yLog, yMin must be > 0). */
  xMin?: number;
  yMin?: number;
  /** A logarithmic y axis (ticks at powers of ten); y values <= yMin are drawn at yMin. */
  yLog?: boolean;
  xFormat?: (x: number) => string;
  yFormat?: (y: number) => string;
  hLines?: RefLine[];
  vLines?: RefLine[];
  width?: number;
  height?: number;
  /** Room on the right for the legend (default 220). */
  legendWidth?: number;
}

export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The smallest "round" number (1, 2, 2.5 or 5 times a power of ten) at or above x: an axis maximum. */
export function niceMax(x: number): number {
  if (!(x > 0) || !Number.isFinite(x)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x * 0.999999) return m * p;
  return 10 * p;
}

/** An empirical CDF of `values` as points (value, % of values <= it), one per value, sorted. */
export function cdfPoints(values: readonly number[]): [number, number][] {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  return s.map((x, i) => [x, ((i + 1) / s.length) * 100]);
}

const defaultFormat = (v: number) => (Math.abs(v) >= 10 || v === 0 ? String(Math.round(v)) : String(Math.round(v * 100) / 100));

export function svgPlot(series: Series[], o: PlotOptions): string {
  const W = o.width ?? 860;
  const H = o.height ?? 480;
  const m = { l: 64, r: o.legendWidth ?? 220, t: 40, b: 52 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const x0 = o.xMin ?? 0;
  const y0 = o.yMin ?? (o.yLog ? 1e-4 : 0);
  const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo), hi);
  const sx = (x: number) => m.l + ((clamp(x, x0, o.xMax) - x0) / (o.xMax - x0)) * pw;
  const fy = o.yLog ? (y: number) => Math.log10(clamp(y, y0, o.yMax) / y0) / Math.log10(o.yMax / y0) : (y: number) => (clamp(y, y0, o.yMax) - y0) / (o.yMax - y0);
  const sy = (y: number) => m.t + ph - fy(y) * ph;
  const xf = o.xFormat ?? defaultFormat;
  const yf = o.yFormat ?? defaultFormat;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${m.l}" y="22" font-size="14" font-weight="bold">${esc(o.title)}</text>`,
    `<line x1="${m.l}" y1="${m.t + ph}" x2="${m.l + pw}" y2="${m.t + ph}" stroke="black"/>`,
    `<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${m.t + ph}" stroke="black"/>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const x = x0 + ((o.xMax - x0) * i) / 5;
    out.push(`<line x1="${sx(x)}" y1="${m.t}" x2="${sx(x)}" y2="${m.t + ph}" stroke="#eee"/>`);
    out.push(`<text x="${sx(x)}" y="${m.t + ph + 16}" text-anchor="middle">${esc(xf(x))}</text>`);
  }
  const yTicks: number[] = [];
  if (o.yLog) for (let e = Math.ceil(Math.log10(y0) - 1e-9); e <= Math.floor(Math.log10(o.yMax) + 1e-9); e++) yTicks.push(10 ** e);
  else for (let i = 0; i <= 5; i++) yTicks.push(y0 + ((o.yMax - y0) * i) / 5);
  for (const y of yTicks) {
    out.push(`<line x1="${m.l}" y1="${sy(y)}" x2="${m.l + pw}" y2="${sy(y)}" stroke="#eee"/>`);
    out.push(`<text x="${m.l - 6}" y="${sy(y) + 4}" text-anchor="end">${esc(yf(y))}</text>`);
  }
  out.push(`<text x="${m.l + pw / 2}" y="${H - 12}" text-anchor="middle">${esc(o.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`);
  for (const h of o.hLines ?? []) {
    if (!Number.isFinite(h.at)) continue;
    const c = h.color ?? '#555';
    out.push(`<line x1="${m.l}" y1="${sy(h.at).toFixed(1)}" x2="${m.l + pw}" y2="${sy(h.at).toFixed(1)}" stroke="${c}" stroke-dasharray="2 3"/>`);
    out.push(`<text x="${m.l + pw - 4}" y="${(sy(h.at) - 4).toFixed(1)}" text-anchor="end" fill="${c}">${esc(h.label)}</text>`);
  }
  for (const v of o.vLines ?? []) {
    if (!Number.isFinite(v.at)) continue;
    const c = v.color ?? '#555';
    out.push(`<line x1="${sx(v.at).toFixed(1)}" y1="${m.t}" x2="${sx(v.at).toFixed(1)}" y2="${m.t + ph}" stroke="${c}" stroke-dasharray="2 3"/>`);
    out.push(`<text x="${(sx(v.at) + 4).toFixed(1)}" y="${m.t + 12}" fill="${c}">${esc(v.label)}</text>`);
  }
  series.forEach((s, k) => {
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)).sort((a, b) => a[0] - b[0]);
    if (pts.length) {
      out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ')}"/>`);
      if (!s.noDots) for (const [x, y] of pts) out.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="2.5" fill="${s.color}"/>`);
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

export interface Bar {
  label: string;
  value: number;
  color?: string;
  /** Text above the bar (default: the value, rounded to 0.1). */
  text?: string;
}

export interface BarOptions {
  title: string;
  yLabel: string;
  yMax: number;
  hLines?: RefLine[];
  width?: number;
  height?: number;
}

/** A vertical bar chart, one bar per entry, labels under the bars (wrapped at spaces). */
export function svgBars(bars: Bar[], o: BarOptions): string {
  const W = o.width ?? 860;
  const H = o.height ?? 400;
  const m = { l: 64, r: 24, t: 40, b: 84 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const sy = (y: number) => m.t + ph - (Math.min(Math.max(y, 0), o.yMax) / o.yMax) * ph;
  const slot = pw / Math.max(1, bars.length);
  const bw = Math.min(80, slot * 0.6);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${m.l}" y="22" font-size="14" font-weight="bold">${esc(o.title)}</text>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const y = (o.yMax * i) / 5;
    out.push(`<line x1="${m.l}" y1="${sy(y)}" x2="${m.l + pw}" y2="${sy(y)}" stroke="#eee"/>`);
    out.push(`<text x="${m.l - 6}" y="${sy(y) + 4}" text-anchor="end">${esc(defaultFormat(y))}</text>`);
  }
  out.push(`<line x1="${m.l}" y1="${m.t + ph}" x2="${m.l + pw}" y2="${m.t + ph}" stroke="black"/>`);
  out.push(`<line x1="${m.l}" y1="${m.t}" x2="${m.l}" y2="${m.t + ph}" stroke="black"/>`);
  out.push(`<text transform="translate(16 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`);
  bars.forEach((b, i) => {
    const cx = m.l + slot * (i + 0.5);
    const c = b.color ?? PALETTE[i % PALETTE.length];
    if (Number.isFinite(b.value)) {
      out.push(`<rect x="${(cx - bw / 2).toFixed(1)}" y="${sy(b.value).toFixed(1)}" width="${bw.toFixed(1)}" height="${(m.t + ph - sy(b.value)).toFixed(1)}" fill="${c}"/>`);
    }
    out.push(`<text x="${cx.toFixed(1)}" y="${(sy(Number.isFinite(b.value) ? b.value : 0) - 4).toFixed(1)}" text-anchor="middle">${esc(b.text ?? (Number.isFinite(b.value) ? (Math.round(b.value * 10) / 10).toString() : 'n/a'))}</text>`);
    // Wrap the label into lines of about the slot's width.
    const maxChars = Math.max(8, Math.floor(slot / 6.5));
    const lines: string[] = [];
    for (const word of b.label.split(' ')) {
      const last = lines[lines.length - 1];
      if (last !== undefined && (last + ' ' + word).length <= maxChars) lines[lines.length - 1] = `${last} ${word}`;
      else lines.push(word);
    }
    lines.slice(0, 4).forEach((line, k) => out.push(`<text x="${cx.toFixed(1)}" y="${m.t + ph + 16 + k * 14}" text-anchor="middle">${esc(line)}</text>`));
  });
  for (const h of o.hLines ?? []) {
    const c = h.color ?? '#555';
    out.push(`<line x1="${m.l}" y1="${sy(h.at).toFixed(1)}" x2="${m.l + pw}" y2="${sy(h.at).toFixed(1)}" stroke="${c}" stroke-dasharray="4 3"/>`);
    out.push(`<text x="${m.l + pw - 4}" y="${(sy(h.at) - 4).toFixed(1)}" text-anchor="end" fill="${c}">${esc(h.label)}</text>`);
  }
  out.push('</svg>');
  return out.join('\n');
}
