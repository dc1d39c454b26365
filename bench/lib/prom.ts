// Reading the server's /metrics in benches: Prometheus histograms by one label, differenced between two scrapes,
// and quantiles read from the buckets (as Prometheus' histogram_quantile); the machine's CPU from /proc/stat.
import { readFileSync } from 'node:fs';

export interface Histogram {
  /** Cumulative counts by upper bound, ascending, +Inf last. */
  buckets: { le: number; count: number }[];
  sum: number;
  count: number;
}

const LINE = /^(\w+)(?:\{([^}]*)\})? (\S+)$/;

function labelsOf(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of (raw ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) out[m[1] as string] = m[2] as string;
  return out;
}

/** The histogram `name` in Prometheus text, one per value of `label` (other labels summed). */
export function parseHistograms(text: string, name: string, label: string): Map<string, Histogram> {
  const out = new Map<string, Histogram>();
  const get = (key: string) => {
    let h = out.get(key);
    if (!h) out.set(key, (h = { buckets: [], sum: 0, count: 0 }));
    return h;
  };
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m || !m[1]?.startsWith(name)) continue;
    const suffix = m[1].slice(name.length);
    const labels = labelsOf(m[2]);
    const key = labels[label] ?? '';
    const value = Number(m[3]);
    if (suffix === '_sum') get(key).sum += value;
    else if (suffix === '_count') get(key).count += value;
    else if (suffix === '_bucket') {
      const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
      const h = get(key);
      const b = h.buckets.find((x) => x.le === le);
      if (b) b.count += value;
      else h.buckets.push({ le, count: value });
    }
  }
  for (const h of out.values()) h.buckets.sort((a, b) => a.le - b.le);
  return out;
}

/** A counter `name` in Prometheus text, one value per value of `label` (other labels summed). */
export function parseCounters(text: string, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m || m[1] !== name) continue;
    const key = labelsOf(m[2])[label] ?? '';
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

/** after - before, per label value (what was observed between two scrapes of the same server). */
export function diffHistograms(after: Map<string, Histogram>, before: Map<string, Histogram>): Map<string, Histogram> {
  const out = new Map<string, Histogram>();
  for (const [key, a] of after) {
    const b = before.get(key);
    const count = a.count - (b?.count ?? 0);
    if (count <= 0) continue;
    out.set(key, {
      buckets: a.buckets.map((x) => ({ le: x.le, count: x.count - (b?.buckets.find((y) => y.le === x.le)?.count ?? 0) })),
      sum: a.sum - (b?.sum ?? 0),
      count,
    });
  }
  return out;
}

/**
 * The q-quantile (0..1) by linear interpolation inside the bucket it falls in (Prometheus' histogram_quantile);
 * in the +Inf bucket, the largest finite bound. NaN for an empty histogram.
 */
export function histogramQuantile(h: Histogram | undefined, q: number): number {
  if (!h || h.count <= 0) return NaN;
  const rank = q * h.count;
  let lower = 0;
  let below = 0;
  for (const b of h.buckets) {
    if (b.count >= rank) {
      if (!Number.isFinite(b.le)) return lower;
      const inBucket = b.count - below;
      return inBucket > 0 ? lower + ((b.le - lower) * (rank - below)) / inBucket : b.le;
    }
    lower = b.le;
    below = b.count;
  }
  return lower;
}

/** The machine's CPU jiffies so far (the `cpu` line of /proc/stat): all, and idle + iowait. */
export function machineJiffies(): { total: number; idle: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n').find((l) => l.startsWith('cpu ')) ?? '';
    // user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
    const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
    return { total: f.reduce((a, x) => a + x, 0), idle: (f[3] ?? 0) + (f[4] ?? 0) };
  } catch {
    return { total: NaN, idle: NaN };
  }
}

/** Starts measuring; the returned function gives the machine's busy share since then, % of all its CPUs. */
export function machineCpuMeter(): () => number {
  const a = machineJiffies();
  return () => {
    const b = machineJiffies();
    const total = b.total - a.total;
    return total > 0 ? ((total - (b.idle - a.idle)) / total) * 100 : NaN;
  };
}

/** A gauge `name` with label `label` = `value` in Prometheus text (NaN when absent). */
export function gaugeValue(text: string, name: string, label: string, value: string): number {
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (m && m[1] === name && labelsOf(m[2])[label] === value) return Number(m[3]);
  }
  return NaN;
}

/** What a QueueSampler saw: the machine's CPU in the ticks when inference jobs waited for a slot, and in the others. */
export interface QueueSample {
  ticks: number;
  /** Ticks that ended with jobs waiting, % of all. */
  waitingTicksPct: number;
  /** Machine CPU (% of all CPUs) over the ticks that ended with jobs waiting, and over the others. */
  cpuWhileWaitingPct: number;
  cpuOtherwisePct: number;
  /** Machine CPU (%) over the ticks that lie wholly within [from, to] (performance.now() ms); NaN if none. */
  cpuBetween(from: number, to: number): number;
}

/**
 * Samples every `everyMs`: the machine's CPU over the tick (/proc/stat) and, at its end, how many inference jobs wait
 * (`parley_inference_queue_jobs{state="waiting"}` from `scrape`). A level can be idle on average and saturated while
 * its callers wait: this tells the two apart. Stop with the returned function.
 */
export function queueSampler(scrape: () => Promise<string>, everyMs = 100): () => Promise<QueueSample> {
  const waiting: number[] = [];
  const cpu: number[] = [];
  /** Each tick's span (performance.now() ms), for cpuBetween. */
  const spans: Array<[number, number]> = [];
  let stopped = false;
  const loop = (async () => {
    let last = machineJiffies();
    let lastAt = performance.now();
    while (!stopped) {
      await new Promise((r) => setTimeout(r, everyMs));
      const text = await scrape().catch(() => '');
      const now = machineJiffies();
      const at = performance.now();
      const span: [number, number] = [lastAt, at];
      lastAt = at;
      const total = now.total - last.total;
      const idle = now.idle - last.idle;
      last = now;
      const w = gaugeValue(text, 'parley_inference_queue_jobs', 'state', 'waiting');
      if (total > 0 && Number.isFinite(w)) {
        cpu.push(((total - idle) / total) * 100);
        waiting.push(w);
        spans.push(span);
      }
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, x) => a + x, 0) / xs.length : NaN);
    const during = cpu.filter((_, i) => (waiting[i] ?? 0) > 0);
    const other = cpu.filter((_, i) => !((waiting[i] ?? 0) > 0));
    return {
      ticks: cpu.length,
      waitingTicksPct: cpu.length ? (during.length / cpu.length) * 100 : NaN,
      cpuWhileWaitingPct: mean(during),
      cpuOtherwisePct: mean(other),
      cpuBetween: (from, to) => mean(cpu.filter((_, i) => (spans[i]?.[0] ?? -Infinity) >= from && (spans[i]?.[1] ?? Infinity) <= to)),
    };
  };
}

/**
 * Starts counting the server's live recognitions by Whisper encoder window (parley_stt_live_recognitions_total); the
 * returned function gives the short window's share of those since, % (NaN when none ran). `scrape` reads /metrics.
 */
export async function shortWindowMeter(scrape: () => Promise<string>): Promise<() => Promise<number>> {
  const read = async () => parseCounters(await scrape(), 'parley_stt_live_recognitions_total', 'window');
  const before = await read();
  return async () => {
    const after = await read();
    const d = (w: string) => (after.get(w) ?? 0) - (before.get(w) ?? 0);
    return d('short') + d('full') > 0 ? (d('short') / (d('short') + d('full'))) * 100 : NaN;
  };
}
