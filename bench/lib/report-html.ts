// The one bench report (bench/run.ts): each bench's key figures read from its JSON, the plots drawn from the same
// JSON, and the self-contained HTML page (inline CSS and SVG, no external asset).
import { quantile } from './report.js';
import { cdfPoints, niceMax, PALETTE, svgBars, svgPlot, type Bar, type Series } from './plot.js';

// ---------------------------------------------------------------------------------------------------------
// What the runner records (also the report's JSON)
// ---------------------------------------------------------------------------------------------------------

export interface Figure {
  label: string;
  value: string;
}

export interface BenchRun {
  /** The npm script's suffix: `agents` for `npm run bench:agents`. */
  name: string;
  script: string;
  file: string;
  title: string;
  /** BENCH_* settings the runner gave it (quick mode; in full mode only what every mode sets). */
  env: Record<string, string>;
  /** What quick mode left out of this bench (null in full mode). */
  leftOut: string | null;
  status: 'ok' | 'failed' | 'not run';
  exitCode: number | null;
  signal: string | null;
  startedAt: string | null;
  wallS: number | null;
  loadAvgBefore: number[] | null;
  loadAvgAfter: number[] | null;
  /** The whole machine's busy share over the bench's run (/proc/stat; 100 = every CPU busy), %. */
  machineCpuPct: number | null;
  /** The log (stdout and stderr), relative to the repository. */
  log: string | null;
  /** The JSON files it wrote, relative to the repository, and their content by file name. */
  resultFiles: string[];
  results: Record<string, unknown>;
  figures: Figure[];
  error: string | null;
  logTail: string | null;
}

export interface Machine {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  kernel: string;
  os: string;
  virtualized: boolean | null;
  node: string;
  hostname: string;
  loadAvgStart: number[];
  loadAvgEnd: number[] | null;
}

export interface GitState {
  commit: string | null;
  subject: string | null;
  branch: string | null;
  dirty: boolean | null;
  /** Paths with uncommitted changes (git status --porcelain), at most 50. */
  changed: string[];
}

export interface Report {
  kind: 'parley-bench-report';
  version: 1;
  date: string;
  finishedAt: string | null;
  mode: 'quick' | 'full';
  command: string;
  machine: Machine;
  git: GitState;
  wallS: number | null;
  runDir: string;
  html: string;
  json: string;
  /** What quick mode left out, bench by bench (empty in full mode). */
  leftOut: string[];
  /** bench:* scripts of package.json that the runner does not know (not run). */
  unknownScripts: string[];
  benches: BenchRun[];
}

// ---------------------------------------------------------------------------------------------------------
// The parts of each bench's JSON read here (all optional: a failed or older run may lack any of them)
// ---------------------------------------------------------------------------------------------------------

interface TurnMetricsJson { e2eMs?: number | null }
interface AgentsJson {
  goals?: { voiceSessionsFit?: number; chatSessionsFit?: number; e2eP50AtC1Ms?: number | null };
  config?: { e2eP95LimitMs?: number; turnsPerCaller?: number };
  voice?: { sessions: number; turns: number; e2eP50Ms: number; e2eP95Ms: number; clientE2eP50Ms?: number; clientE2eP95Ms?: number; keepsUp: boolean; underrunTurns?: number; agentTurns?: number; why?: string[] }[];
  chat?: { sessions: number; replyP50Ms: number; replyP95Ms: number; keepsUp: boolean }[];
  voiceSessions?: Record<string, { metrics?: TurnMetricsJson[]; clientE2eMs?: number[] }[]>;
  voiceStop?: string;
  failure?: string | null;
}
interface Ccdf { ms: number; above: number }
interface TelSide { calls: number; v2vP50Ms: number; v2vP95Ms: number; e2eP50Ms?: number; failed?: number }
interface TelLevel {
  level: number;
  sip: TelSide & { deviationP99Ms: number; deviationMaxMs?: number; sendDeviationP99Ms: number; held: boolean; underrunS?: number; deviationCcdf?: Ccdf[]; sendDeviationCcdf?: Ccdf[] };
  ws: TelSide;
  sipMixed?: TelSide;
}
interface HostNoiseJson { deviationP99Ms: number; deviationMaxMs?: number; stealPct?: number | null }
interface PacingRunJson {
  processes: number; store: string; pace: string; cps: number; calls: number; invites: number;
  achievedPct: number; minGapMs: number; maxInSecondWindow: number; gapsMs?: number[]; holdMs?: number; error?: string | null;
}
interface OutboundJson {
  pacing?: PacingRunJson[];
  answered?: PacingRunJson[];
  answer?: { measured: number; calls: number; answerToAudio: { p50: number; p95: number }; postToInvite: { p50: number; p95: number } } | null;
  failure?: string | null;
}
interface TelephonyJson {
  setup?: { calls: number; p50: number; p95: number } | null;
  levels?: TelLevel[];
  hostNoise?: { before: HostNoiseJson | null; after: HostNoiseJson | null };
  goals?: { maxCallsHeld?: number; firstLevelNotHeld?: number | null };
  outbound?: OutboundJson | null;
}
interface TurnSummary { policy: string; setting: number; items: number; cutoff: Record<string, { n: number; cut: number; rate: number }>; delayP50: number; decisionP50: number }
interface BargeSide { stopMs?: number[]; p50?: number; p95?: number; missed?: number; falseRate?: number }
interface TurnsJson {
  recognition?: { a: number; b: number };
  results?: Record<string, { before: TurnSummary; defaults: TurnSummary; vad: TurnSummary[]; smart: TurnSummary[] }>;
  barge?: { result?: Record<string, BargeSide> } | null;
}

// ---------------------------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------------------------

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const f0 = (x: unknown) => (isNum(x) ? x.toFixed(0) : 'n/a');
const f1 = (x: unknown) => (isNum(x) ? x.toFixed(1) : 'n/a');
const pct = (x: unknown, digits = 1) => (isNum(x) ? `${(x * 100).toFixed(digits)}%` : 'n/a');
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The first result whose file name starts with `prefix` (newest name last when several). */
function result<T>(run: BenchRun | undefined, prefix: string): T | null {
  if (!run) return null;
  const names = Object.keys(run.results).filter((n) => n.startsWith(prefix)).sort();
  const name = names[names.length - 1];
  return name ? (run.results[name] as T) : null;
}

// ---------------------------------------------------------------------------------------------------------
// Key figures per bench
// ---------------------------------------------------------------------------------------------------------

type FigureFn = (run: BenchRun) => Figure[];

const FIGURES: Record<string, FigureFn> = {
  redaction: (run) => {
    const r = result<{ items: number; cardRecall: number; ordinaryFalsePositiveRate: number; usPerString: number }>(run, 'redaction');
    if (!r) return [];
    return [
      { label: 'items', value: String(r.items) },
      { label: 'card-number recall (goal >= 99%)', value: pct(r.cardRecall) },
      { label: 'false positives on ordinary numbers (goal <= 1%)', value: pct(r.ordinaryFalsePositiveRate, 2) },
      { label: 'time per string', value: `${f1(r.usPerString)} us` },
    ];
  },
  publish: (run) => {
    const r = result<{ rows: { dialect: string; case: string; n: number; p50Ms: number; p95Ms: number }[] }>(run, 'publish-latency');
    return (r?.rows ?? []).map((x) => ({ label: `${x.dialect}, ${x.case} (n ${x.n})`, value: `p50 ${f1(x.p50Ms)} / p95 ${f1(x.p95Ms)} ms` }));
  },
  analytics: (run) => {
    const r = result<{ calls: number; results: { store: string; timings: { route: string; p50: number; p95: number }[] }[] }>(run, 'analytics');
    return (r?.results ?? []).flatMap((x) => x.timings.filter((t) => t.route.startsWith('dashboard')).map((t) => ({ label: `${x.store}, ${r?.calls} calls, ${t.route.replace(/agentId=\w+/, 'agentId=…').replace(/dateFrom=[\d-]+&dateTo=[\d-]+/, 'all days')} (goal p95 <= 200 ms)`, value: `p50 ${f1(t.p50)} / p95 ${f1(t.p95)} ms` })));
  },
  webhooks: (run) => {
    const r = result<{ webhooks?: { producer: string; webhooksPerEvent: number; offeredDeliveriesPerS: number | null; sustainedPerS: number; latencyP50Ms: number; latencyP95Ms: number; failed: number; signatureFailures: number }[]; apiCall?: { addedMs?: { p50: number; p95: number }; platformPartP50Ms?: number } }>(run, 'webhooks-tools');
    if (!r) return [];
    const out = (r.webhooks ?? []).map((w) => ({ label: `deliveries, ${w.producer}, ${w.webhooksPerEvent} webhook(s) an event${isNum(w.offeredDeliveriesPerS) ? `, offered ${w.offeredDeliveriesPerS}/s` : w.producer.startsWith('direct') ? ', as fast as possible' : ''}`, value: `${f0(w.sustainedPerS)}/s, enqueue -> receipt p50 ${f0(w.latencyP50Ms)} / p95 ${f0(w.latencyP95Ms)} ms${w.failed || w.signatureFailures ? `, ${w.failed} failed, ${w.signatureFailures} bad signatures` : ''}` }));
    if (r.apiCall?.addedMs) out.push({ label: 'api_call tool added to a turn', value: `p50 ${f1(r.apiCall.addedMs.p50)} / p95 ${f1(r.apiCall.addedMs.p95)} ms (platform's part p50 ${f1(r.apiCall.platformPartP50Ms)} ms)` });
    return out;
  },
  flood: (run) => {
    const r = result<{ messages: number; runs: { health: number[]; bystander: number[]; flooder?: { closeReason?: string; replies?: number } }[] }>(run, 'chat-flood');
    return (r?.runs ?? []).flatMap((x) => [
      { label: `/health during a ${r?.messages}-message flood`, value: `p50 ${f1(quantile(x.health, 0.5))} / p95 ${f1(quantile(x.health, 0.95))} / max ${f1(x.health.length ? Math.max(...x.health) : NaN)} ms` },
      { label: 'bystander chat reply', value: `p50 ${f1(quantile(x.bystander, 0.5))} / max ${f1(x.bystander.length ? Math.max(...x.bystander) : NaN)} ms` },
      { label: 'flooder', value: `${x.flooder?.replies ?? 'n/a'} replies, closed: ${x.flooder?.closeReason ?? 'n/a'}` },
    ]);
  },
  audiences: (run) => {
    const r = result<{ uploads: number; rows: number; runs: { idle: { p50: number; p99: number }; during: { p50: number; p99: number; max: number }; uploadsMs: number; uploads: { status: number }[]; rssMb: { before: number; peak: number } }[] }>(run, 'audience-upload');
    return (r?.runs ?? []).flatMap((x) => [
      { label: `/health during ${r?.uploads} uploads of ${r?.rows} rows`, value: `p50 ${f1(x.during.p50)} / p99 ${f1(x.during.p99)} / max ${f1(x.during.max)} ms (idle p50 ${f1(x.idle.p50)})` },
      { label: 'uploads', value: `${f0(x.uploadsMs)} ms, statuses ${x.uploads.map((u) => u.status).join(', ')}` },
      { label: 'server RSS', value: `${f0(x.rssMb.before)} -> peak ${f0(x.rssMb.peak)} MB` },
    ]);
  },
  agents: (run) => {
    const r = result<AgentsJson>(run, 'agent-sessions');
    if (!r) return [];
    const out: Figure[] = (r.voice ?? []).map((v) => ({
      label: `${v.sessions} voice session(s), ${v.turns} turns`,
      value: `e2e p50 ${f0(v.e2eP50Ms)} / p95 ${f0(v.e2eP95Ms)} ms (client ${f0(v.clientE2eP50Ms)} / ${f0(v.clientE2eP95Ms)}): ${v.keepsUp ? 'keeps up' : `falls behind (${(v.why ?? []).join('; ')})`}`,
    }));
    const chat = r.chat ?? [];
    if (chat.length) out.push({ label: `chat sessions (levels ${chat.map((c) => c.sessions).join(', ')})`, value: chat.map((c) => `${c.sessions}: p95 ${f1(c.replyP95Ms)} ms`).join('; ') });
    out.push({ label: 'voice sessions that keep up', value: `${r.goals?.voiceSessionsFit ?? 'n/a'}${r.voiceStop ? ` (${r.voiceStop})` : ''}` });
    return out;
  },
  telephony: (run) => {
    const r = result<TelephonyJson>(run, 'telephony');
    if (!r) return [];
    const out: Figure[] = [];
    if (r.setup) out.push({ label: `call set-up (sipp, ${r.setup.calls} calls)`, value: `INVITE -> 200 p50 ${f1(r.setup.p50)} / p95 ${f1(r.setup.p95)} ms` });
    for (const l of r.levels ?? []) {
      const sip = l.sipMixed ?? l.sip;
      out.push({ label: `${l.level} call(s): voice to voice SIP vs WS`, value: `p50 ${f0(sip.v2vP50Ms)} vs ${f0(l.ws.v2vP50Ms)} ms, p95 ${f0(sip.v2vP95Ms)} vs ${f0(l.ws.v2vP95Ms)}` });
      out.push({ label: `${l.level} call(s): RTP deviation p99 at the caller / at the send`, value: `${f1(l.sip.deviationP99Ms)} / ${f1(l.sip.sendDeviationP99Ms)} ms: ${l.sip.held ? 'held' : 'NOT held'}` });
    }
    const n = r.hostNoise;
    if (n?.before || n?.after) out.push({ label: "host's timer floor p99 (servers idle, before / after)", value: `${f1(n.before?.deviationP99Ms)} / ${f1(n.after?.deviationP99Ms)} ms` });
    return out;
  },
  outbound: (run) => {
    const r = result<OutboundJson>(run, 'telephony-outbound');
    return r ? outboundFigures(r) : [];
  },
  turns: (run) => {
    const r = result<TurnsJson>(run, 'turns-');
    if (!r) return [];
    const out: Figure[] = [];
    if (r.recognition) out.push({ label: 'recognition time on this machine', value: `${f0(r.recognition.a)} ms + ${f1(r.recognition.b)} ms per second of audio` });
    for (const [set, x] of Object.entries(r.results ?? {})) {
      const mid = x.defaults.cutoff.mid_clause;
      out.push({ label: `${set} (${x.defaults.items} items), defaults`, value: `mid-clause cut off ${pct(mid?.rate)}${mid ? ` of ${mid.n}` : ''}, delay p50 ${f0(x.defaults.delayP50)} ms (before: ${pct(x.before.cutoff.mid_clause?.rate)}, ${f0(x.before.delayP50)} ms)` });
    }
    for (const [side, b] of Object.entries(r.barge?.result ?? {})) {
      out.push({ label: `barge-in, ${side}`, value: `stop p50 ${f0(b.p50)} / p95 ${f0(b.p95)} ms, missed ${b.missed ?? 'n/a'}, false barge-ins ${pct(b.falseRate)}` });
    }
    return out;
  },
  'answer-detect': (run) => {
    const r = result<Record<string, unknown> & { pace?: string }>(run, 'answer-detect');
    if (!r) return [];
    const out: Figure[] = [];
    for (const set of ['synth', 'asterisk']) {
      const s = r[set] as { items: number; correct: number; perClass?: Record<string, { items: number; correct: string; p50: string }> } | undefined;
      if (!s) continue;
      const classes = Object.entries(s.perClass ?? {}).filter(([c]) => c !== 'all').map(([c, v]) => `${c} ${v.correct}${v.p50 ? ` (${v.p50} ms)` : ''}`);
      out.push({ label: `${set} greetings, ${r.pace ?? 'realtime'} pacing`, value: `${s.correct}/${s.items} correct; ${classes.join(', ')}` });
    }
    return out;
  },
  'whisper-batch': (run) => {
    const r = result<{ window?: { beams: number; policy: string; speedup: number; werFull: number; promptMsP50: number; prompts: number }[]; batching?: { beams: number; b: number; mode: string; ratio: number }[]; pool?: { layout: string; throughput: number }[] }>(run, 'whisper-batch');
    if (!r) return [];
    return [
      ...(r.window ?? []).map((w) => ({ label: `window: ${w.policy}, beams ${w.beams} (${w.prompts} prompts)`, value: `speedup ${f1(w.speedup)}x, p50 ${f0(w.promptMsP50)} ms, WER (numbers as words) ${pct(w.werFull, 2)}` })),
      ...(r.batching ?? []).filter((b) => b.mode !== 'one by one, 30 s').map((b) => ({ label: `batching: B ${b.b}, ${b.mode}, beams ${b.beams}`, value: `ratio ${b.ratio}` })),
      ...(r.pool ?? []).map((p) => ({ label: `pool: ${p.layout}`, value: `${f1(p.throughput)} utterances/s` })),
    ];
  },
  voices: (run) => {
    const r = result<{ results?: { voice: string; engine?: string; werFull: number; rtf: number }[]; missing?: string[] }>(run, 'voices');
    if (!r) return [];
    const out = (r.results ?? []).map((v) => ({ label: `voice ${v.voice}${v.engine ? ` (${v.engine})` : ''}`, value: `round-trip WER ${pct(v.werFull)}, real-time factor ${isNum(v.rtf) ? v.rtf.toFixed(3) : 'n/a'}` }));
    if (r.missing?.length) out.push({ label: 'voices not listed by the server', value: r.missing.join(', ') });
    return out;
  },
  console: (run) => {
    const r = result<{ load?: Record<string, { n: number; p50: number; p95: number }>; download?: { bodyBytes: number; responses: number }; talk?: { browser: { p50: number; n: number }; rawWebSocket: { p50: number; n: number }; browserMinusWsP50Ms: number } }>(run, 'console');
    if (!r) return [];
    const out: Figure[] = Object.entries(r.load ?? {}).map(([k, v]) => ({ label: `load to interactive, ${k} (n ${v.n})`, value: `p50 ${f0(v.p50)} / p95 ${f0(v.p95)} ms` }));
    if (r.download) out.push({ label: 'cold signed-in download', value: `${r.download.responses} responses, ${r.download.bodyBytes} B of bodies` });
    if (r.talk) out.push({ label: 'talk latency, browser vs raw WebSocket (p50)', value: `${f0(r.talk.browser.p50)} vs ${f0(r.talk.rawWebSocket.p50)} ms (+${f0(r.talk.browserMinusWsP50Ms)})` });
    return out;
  },
};

function outboundFigures(r: OutboundJson): Figure[] {
  const out: Figure[] = [];
  for (const p of [...(r.pacing ?? []), ...(r.answered ?? [])]) {
    out.push({ label: `pacing: ${paceLabel(p)}`, value: `${f1(p.achievedPct)}% of the limit, smallest gap ${f1(p.minGapMs)} ms, at most ${p.maxInSecondWindow} in 1 s${p.error ? `; error: ${p.error.split('\n')[0]}` : ''}` });
  }
  if (r.answer) out.push({ label: `outbound answer -> first agent audio (${r.answer.measured}/${r.answer.calls} calls)`, value: `p50 ${f1(r.answer.answerToAudio.p50)} / p95 ${f1(r.answer.answerToAudio.p95)} ms; POST -> INVITE p50 ${f1(r.answer.postToInvite.p50)} ms` });
  return out;
}

const paceLabel = (p: PacingRunJson) => `${p.processes} server${p.processes > 1 ? 's' : ''}, ${p.store}${p.pace === 'redis' ? ', pace in Redis' : ''}, cpsLimit ${p.cps}${p.holdMs ? ', calls answered' : ', calls refused'} (${p.invites}/${p.calls})`;

/** The key figures of a bench's results (none when it wrote nothing readable). */
export function keyFigures(run: BenchRun): Figure[] {
  try {
    return FIGURES[run.name]?.(run) ?? [];
  } catch (err) {
    return [{ label: 'figures', value: `could not be read: ${err instanceof Error ? err.message : String(err)}` }];
  }
}

// ---------------------------------------------------------------------------------------------------------
// Plots
// ---------------------------------------------------------------------------------------------------------

export interface Plot {
  id: string;
  title: string;
  /** What the plot shows and where its data comes from. */
  caption: string;
  svg: string | null;
  /** Why it was not drawn. */
  missing?: string;
}

const byName = (benches: BenchRun[], name: string) => benches.find((b) => b.name === name && Object.keys(b.results).length > 0);
const ms = (x: number) => `${Math.round(x)}`;

function agentLatencyPlot(benches: BenchRun[]): Plot {
  const base = { id: 'latency', title: 'Agent sessions: e2e latency distribution per level' };
  const caption =
    'Empirical CDF of the engine\'s e2e per turn (caller stops speaking -> first agent audio, from the call records\' turnMetrics) at each level of concurrent voice sessions, from bench:agents (voiceSessions). A curve further right is slower; its spread is the turn-to-turn variation.';
  const r = result<AgentsJson>(byName(benches, 'agents'), 'agent-sessions');
  const levels = Object.entries(r?.voiceSessions ?? {}).map(([n, sessions]) => ({ n: Number(n), e2e: sessions.flatMap((s) => (s.metrics ?? []).map((m) => m.e2eMs)).filter(isNum) })).filter((l) => l.e2e.length).sort((a, b) => a.n - b.n);
  if (!levels.length) return { ...base, caption, svg: null, missing: 'no per-turn e2e in the bench:agents result' };
  const all = levels.flatMap((l) => l.e2e);
  const series: Series[] = levels.map((l, k) => ({ name: `${l.n} session${l.n > 1 ? 's' : ''} (${l.e2e.length} turns)`, color: PALETTE[k % PALETTE.length] as string, points: cdfPoints(l.e2e), noDots: l.e2e.length > 40 }));
  const limit = r?.config?.e2eP95LimitMs;
  return {
    ...base,
    caption,
    svg: svgPlot(series, { title: base.title, xLabel: 'engine e2e per turn (ms)', yLabel: 'turns at or below (%)', xMax: niceMax(Math.min(Math.max(...all), 10_000)), yMax: 100, vLines: isNum(limit) ? [{ at: limit, label: `keep-up limit for p95 (${limit} ms)` }] : [], hLines: [{ at: 50, label: 'p50' }, { at: 95, label: 'p95' }] }),
  };
}

function capacityPlot(benches: BenchRun[]): Plot {
  const base = { id: 'capacity', title: 'Capacity: e2e latency vs concurrent voice sessions' };
  const caption =
    'Engine e2e p50 (solid) and p95 (dashed) at each level of concurrent voice sessions, and the client-side e2e (last speech chunk sent -> first audio delta) p50, from bench:agents (voice). A level keeps up when its p95 stays under the limit (dotted line) with no output underrun; a circled point did not keep up.';
  const r = result<AgentsJson>(byName(benches, 'agents'), 'agent-sessions');
  const rows = (r?.voice ?? []).filter((v) => isNum(v.e2eP50Ms)).sort((a, b) => a.sessions - b.sessions);
  if (!rows.length) return { ...base, caption, svg: null, missing: 'no voice levels in the bench:agents result' };
  const behind = rows.filter((v) => !v.keepsUp);
  const series: Series[] = [
    { name: 'e2e p50', color: PALETTE[0] as string, points: rows.map((v) => [v.sessions, v.e2eP50Ms]) },
    { name: 'e2e p95', color: PALETTE[1] as string, dashed: true, points: rows.map((v) => [v.sessions, v.e2eP95Ms]), marks: behind.map((v) => ({ at: [v.sessions, v.e2eP95Ms] as [number, number], label: 'behind' })) },
    { name: 'client e2e p50', color: PALETTE[2] as string, points: rows.map((v) => [v.sessions, v.clientE2eP50Ms ?? NaN]) },
  ];
  const limit = r?.config?.e2eP95LimitMs;
  const yTop = Math.max(...rows.map((v) => v.e2eP95Ms).filter(isNum), isNum(limit) ? limit : 0);
  return {
    ...base,
    caption,
    svg: svgPlot(series, { title: base.title, xLabel: 'concurrent voice sessions', yLabel: 'ms', xMax: niceMax(Math.max(...rows.map((v) => v.sessions))), yMax: niceMax(Math.min(yTop * 1.1, 20_000)), hLines: isNum(limit) ? [{ at: limit, label: `keep-up limit, p95 ${limit} ms` }] : [] }),
  };
}

function phoneWebPlot(benches: BenchRun[]): Plot {
  const base = { id: 'phone-web', title: 'Phone vs web calls: voice to voice vs concurrent calls' };
  const caption =
    'Voice to voice (the caller\'s speech ends -> first agent audio heard), p50 solid and p95 dashed, for phone calls (SIP/RTP, PCMU) and web calls (agent WebSocket, same 8 kHz sentences) at each level, from bench:telephony (levels). With BENCH_SIDE_ORDER=mixed the phone figures are those of the mixed pass.';
  const r = result<TelephonyJson>(byName(benches, 'telephony'), 'telephony');
  const rows = (r?.levels ?? []).sort((a, b) => a.level - b.level);
  if (!rows.length) return { ...base, caption, svg: null, missing: 'no levels in the bench:telephony result' };
  const sip = (l: TelLevel) => l.sipMixed ?? l.sip;
  const series: Series[] = [
    { name: 'phone p50', color: PALETTE[0] as string, points: rows.map((l) => [l.level, sip(l).v2vP50Ms]) },
    { name: 'phone p95', color: PALETTE[0] as string, dashed: true, points: rows.map((l) => [l.level, sip(l).v2vP95Ms]) },
    { name: 'web p50', color: PALETTE[1] as string, points: rows.map((l) => [l.level, l.ws.v2vP50Ms]) },
    { name: 'web p95', color: PALETTE[1] as string, dashed: true, points: rows.map((l) => [l.level, l.ws.v2vP95Ms]) },
  ];
  const top = Math.max(...rows.flatMap((l) => [sip(l).v2vP95Ms, l.ws.v2vP95Ms]).filter(isNum), 1);
  return { ...base, caption, svg: svgPlot(series, { title: base.title, xLabel: 'concurrent calls', yLabel: 'voice to voice (ms)', xMax: niceMax(Math.max(...rows.map((l) => l.level), 2)), yMax: niceMax(Math.min(top * 1.1, 20_000)), height: 400 }) };
}

function turnPlot(benches: BenchRun[]): Plot {
  const base = { id: 'turns', title: 'Turn taking: false cut-offs vs end-of-turn wait' };
  const caption =
    'Each policy swept over its setting, from bench:turns (results): share of items cut off at a 600 ms mid-clause hesitation (y) against the end-of-turn wait at true ends (x, p50, recognition time not counted). Smart turn (solid; its threshold swept, circles at the shipped defaults and at the punctuation rule before it) against VAD-only silence (dashed; its delay swept). Down and left is better.';
  const r = result<TurnsJson>(byName(benches, 'turns'), 'turns-');
  const sets = Object.entries(r?.results ?? {}).filter(([name]) => ['human 8k', 'human 8k inserted, after function word', 'synth eval'].includes(name));
  if (!sets.length) return { ...base, caption, svg: null, missing: 'no turn-taking curves in the bench:turns result' };
  const short: Record<string, string> = { 'human 8k': 'human', 'human 8k inserted, after function word': 'inserted, fn word', 'synth eval': 'synth eval' };
  const series: Series[] = [];
  sets.forEach(([name, x], k) => {
    const color = PALETTE[k % PALETTE.length] as string;
    const pt = (s: TurnSummary): [number, number] => [s.decisionP50, 100 * (s.cutoff.mid_clause?.rate ?? NaN)];
    series.push({ name: `${short[name] ?? name}: smart turn`, color, points: x.smart.map(pt), marks: [{ at: pt(x.defaults), label: 'default' }, { at: pt(x.before), label: 'before' }] });
    series.push({ name: `${short[name] ?? name}: VAD only`, color, dashed: true, points: x.vad.map(pt) });
  });
  return { ...base, caption, svg: svgPlot(series, { title: base.title, xLabel: 'end-of-turn wait at true ends, p50 (ms)', yLabel: 'false cut-offs at mid-clause hesitations (%)', xMax: 2000, yMax: 100, width: 920, legendWidth: 250 }) };
}

function bargePlot(benches: BenchRun[]): Plot | null {
  const r = result<TurnsJson>(byName(benches, 'turns'), 'turns-');
  const sides = Object.entries(r?.barge?.result ?? {}).filter(([, s]) => (s.stopMs ?? []).length);
  if (!sides.length) return null;
  const all = sides.flatMap(([, s]) => s.stopMs ?? []);
  return {
    id: 'barge',
    title: 'Barge-in: time for the agent to stop',
    caption: 'Empirical CDF of the time from the caller\'s speech onset (talking over the agent\'s opening) to the agent\'s audio stopping at the caller, web and phone calls, from bench:turns (barge).',
    svg: svgPlot(sides.map(([side, s], k) => ({ name: `${side} (${(s.stopMs ?? []).length} trials, ${s.missed ?? 0} missed)`, color: PALETTE[k % PALETTE.length] as string, points: cdfPoints(s.stopMs ?? []) })), { title: 'Barge-in: time for the agent to stop', xLabel: 'onset -> agent audio stopped (ms)', yLabel: 'trials at or below (%)', xMax: niceMax(Math.max(...all)), yMax: 100, height: 380 }),
  };
}

/** Pacing runs from bench:outbound, and from bench:telephony when it ran its outbound phase. */
function pacingRuns(benches: BenchRun[]): { from: string; run: PacingRunJson }[] {
  const out: { from: string; run: PacingRunJson }[] = [];
  const o = result<OutboundJson>(byName(benches, 'outbound'), 'telephony-outbound');
  for (const run of [...(o?.pacing ?? []), ...(o?.answered ?? [])]) out.push({ from: 'bench:outbound', run });
  const t = result<TelephonyJson>(byName(benches, 'telephony'), 'telephony');
  for (const run of [...(t?.outbound?.pacing ?? []), ...(t?.outbound?.answered ?? [])]) out.push({ from: 'bench:telephony', run });
  return out.filter((x) => x.run.invites > 1);
}

function pacingPlot(benches: BenchRun[]): Plot {
  const base = { id: 'pacing', title: 'Outbound pacing: achieved rate as % of cpsLimit' };
  const caption =
    'Each pacing run: calls queued at once on an outbound trunk, INVITE arrivals logged by a sipp carrier; achieved rate = (INVITEs - 1) / (last - first arrival), as a share of the trunk\'s cpsLimit, per setting (servers, store, where the pace is kept, limit, and whether the carrier refused or answered the calls), from bench:outbound (pacing, answered). The goal is 95%.';
  const runs = pacingRuns(benches);
  if (!runs.length) return { ...base, caption, svg: null, missing: 'no pacing runs (bench:outbound did not run or failed)' };
  const bars: Bar[] = runs.map(({ from, run }, k) => ({ label: `${paceLabel(run)}${from === 'bench:telephony' ? ' [telephony]' : ''}`, value: run.achievedPct, color: PALETTE[k % PALETTE.length] }));
  const top = Math.max(100, ...bars.map((b) => b.value).filter(isNum));
  return { ...base, caption, svg: svgBars(bars, { title: base.title, yLabel: 'achieved rate (% of cpsLimit)', yMax: top > 100 ? niceMax(top) : 100, hLines: [{ at: 95, label: 'goal 95%' }], height: 420 }) };
}

function gapPlot(benches: BenchRun[]): Plot | null {
  const runs = pacingRuns(benches).filter((x) => (x.run.gapsMs ?? []).length);
  if (!runs.length) return null;
  const cps = runs[0]?.run.cps ?? 50;
  const same = runs.every((x) => x.run.cps === cps);
  const all = runs.flatMap((x) => x.run.gapsMs ?? []);
  return {
    id: 'gaps',
    title: 'Outbound pacing: gaps between INVITEs',
    caption: `Empirical CDF of the gap between consecutive INVITEs at the carrier, per pacing run (bench:outbound, gapsMs). ${same ? `At cpsLimit ${cps} the pace is one INVITE every ${ms(1000 / cps)} ms (dotted); the smallest-gap goal is ${ms(1000 / cps - 5)} ms.` : 'Runs at different limits: compare each with 1000/cpsLimit.'} Gaps longer than the interval are time the pace lost.`,
    svg: svgPlot(
      runs.map(({ run }, k) => ({ name: `${run.processes} srv ${run.store}${run.holdMs ? ' answered' : ''} cps ${run.cps}`, color: PALETTE[k % PALETTE.length] as string, points: cdfPoints(run.gapsMs ?? []), noDots: true })),
      { title: 'Outbound pacing: gaps between INVITEs', xLabel: 'gap between consecutive INVITEs (ms)', yLabel: 'gaps at or below (%)', xMax: niceMax(Math.min(quantile(all, 0.99) * 1.5, 1000)), yMax: 100, vLines: same ? [{ at: 1000 / cps, label: `1000/cps = ${ms(1000 / cps)} ms` }] : [], height: 400, legendWidth: 240 },
    ),
  };
}

function rtpPlot(benches: BenchRun[]): Plot {
  const base = { id: 'rtp', title: 'RTP send timing: share of packet intervals off by more than x' };
  const caption =
    'Complementary CDF (log scale) of |interval between consecutive RTP packets from the server - 20 ms| over all phone calls of each level: at the caller\'s socket (solid; includes the bench\'s own scheduling) and at the server\'s send (dashed; its histogram parley_rtp_send_interval_deviation_seconds), from bench:telephony (levels[].sip.deviationCcdf, sendDeviationCcdf). Where a curve crosses 1% is the p99 deviation; the goal is p99 <= 5 ms (dotted).';
  const r = result<TelephonyJson>(byName(benches, 'telephony'), 'telephony');
  const rows = (r?.levels ?? []).filter((l) => (l.sip.deviationCcdf ?? []).length).sort((a, b) => a.level - b.level);
  if (!rows.length) return { ...base, caption, svg: null, missing: (r?.levels ?? []).length ? 'the bench:telephony result has no deviation distribution (an older bench)' : 'no levels in the bench:telephony result' };
  const FLOOR = 1e-4;
  // Points down to the first threshold with no interval above it (drawn on the floor), none past it.
  const tail = (c: Ccdf[]): [number, number][] => {
    const out: [number, number][] = [];
    for (const p of c) {
      out.push([p.ms, Math.max(p.above, FLOOR)]);
      if (p.above <= 0) break;
    }
    return out;
  };
  const series: Series[] = [];
  rows.forEach((l, k) => {
    const color = PALETTE[k % PALETTE.length] as string;
    series.push({ name: `${l.level} call${l.level > 1 ? 's' : ''}: at the caller`, color, points: tail(l.sip.deviationCcdf ?? []) });
    if ((l.sip.sendDeviationCcdf ?? []).length) series.push({ name: `${l.level} call${l.level > 1 ? 's' : ''}: at the send`, color, dashed: true, points: tail(l.sip.sendDeviationCcdf ?? []) });
  });
  const xTop = Math.max(...series.flatMap((s) => s.points.filter(([, y]) => y > FLOOR).map(([x]) => x)), 5);
  const n = r?.hostNoise;
  const floorText = n?.before || n?.after ? ` The host's own floor (a bare 20 ms timer, servers idle): p99 ${f1(n.before?.deviationP99Ms)} ms before the levels, ${f1(n.after?.deviationP99Ms)} ms after.` : '';
  return {
    ...base,
    caption: caption + floorText,
    svg: svgPlot(series, { title: base.title, xLabel: 'deviation from 20 ms (ms)', yLabel: 'share of intervals above', xMax: niceMax(Math.min(xTop * 1.2, 50)), yMax: 1, yMin: FLOOR, yLog: true, yFormat: (y) => `${+(y * 100).toPrecision(2)}%`, vLines: [{ at: 5, label: 'goal: p99 <= 5 ms' }], hLines: [{ at: 0.01, label: 'p99' }], legendWidth: 220 }),
  };
}

function rtpP99Plot(benches: BenchRun[]): Plot | null {
  const r = result<TelephonyJson>(byName(benches, 'telephony'), 'telephony');
  const rows = (r?.levels ?? []).sort((a, b) => a.level - b.level);
  if (rows.length < 2) return null;
  const top = Math.max(...rows.flatMap((l) => [l.sip.deviationP99Ms, l.sip.sendDeviationP99Ms]).filter(isNum), 6);
  return {
    id: 'rtp-p99',
    title: 'RTP send timing: deviation p99 vs concurrent calls',
    caption: 'The p99 of the same deviation at each level, at the caller and at the server\'s send, from bench:telephony (levels[].sip); a circled level was not held (output fell behind real time).',
    svg: svgPlot(
      [
        { name: 'at the caller', color: PALETTE[0] as string, points: rows.map((l) => [l.level, l.sip.deviationP99Ms]), marks: rows.filter((l) => !l.sip.held).map((l) => ({ at: [l.level, l.sip.deviationP99Ms] as [number, number], label: 'not held' })) },
        { name: 'at the send', color: PALETTE[1] as string, dashed: true, points: rows.map((l) => [l.level, l.sip.sendDeviationP99Ms]) },
      ],
      { title: 'RTP send timing: deviation p99 vs concurrent calls', xLabel: 'concurrent phone calls', yLabel: 'deviation p99 (ms)', xMax: niceMax(Math.max(...rows.map((l) => l.level))), yMax: niceMax(top * 1.1), hLines: [{ at: 5, label: 'goal 5 ms' }], height: 380 },
    ),
  };
}

/** Every plot of the report, in page order (a plot whose data is missing says why instead). */
export function reportPlots(benches: BenchRun[]): Plot[] {
  return [agentLatencyPlot(benches), capacityPlot(benches), phoneWebPlot(benches), turnPlot(benches), bargePlot(benches), pacingPlot(benches), gapPlot(benches), rtpPlot(benches), rtpP99Plot(benches)].filter((p): p is Plot => p !== null);
}

// ---------------------------------------------------------------------------------------------------------
// The page
// ---------------------------------------------------------------------------------------------------------

const CSS = `
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1180px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; white-space: nowrap; }
.ok { color: #1a7f37; font-weight: bold; } .failed { color: #c62828; font-weight: bold; } .notrun { color: #777; }
.caption { font-size: 13px; color: #444; max-width: 900px; } .muted { color: #666; font-size: 13px; }
figure { margin: 16px 0 28px; } pre { background: #f7f7f7; padding: 8px; font-size: 12px; overflow-x: auto; max-height: 400px; }
code { font-size: 12px; } .warn { background: #fff4e5; border: 1px solid #f0c36d; padding: 6px 10px; font-size: 13px; }
`;

function statusCell(b: BenchRun): string {
  const cls = b.status === 'ok' ? 'ok' : b.status === 'failed' ? 'failed' : 'notrun';
  return `<span class="${cls}">${esc(b.status)}</span>`;
}

export function renderHtml(report: Report, plots: Plot[]): string {
  const m = report.machine;
  const g = report.git;
  const load = (l: number[] | null) => (l ? l.map((x) => x.toFixed(2)).join(' / ') : 'n/a');
  const failed = report.benches.filter((b) => b.status === 'failed');
  const parts: string[] = [];
  parts.push(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Parley bench report ${esc(report.date)}</title><style>${CSS}</style></head><body>`);
  parts.push(`<h1>Parley bench report (${report.mode === 'quick' ? 'quick' : 'full'} run)</h1>`);
  parts.push(`<p class="muted">${esc(report.date)} &middot; <code>${esc(report.command)}</code> &middot; wall time ${report.wallS === null ? 'n/a' : `${f0(report.wallS)} s`}</p>`);
  if (report.mode === 'quick') parts.push('<p class="warn">Quick run: fewer levels, turns and trials than the benches\' defaults (see "What quick mode left out"); its figures show that the benches work and roughly where the machine stands, not figures to quote. Quote a full run (<code>npm run bench</code>).</p>');
  parts.push('<h2>Machine and build</h2><table>');
  const rows: [string, string][] = [
    ['CPU', `${m.cpuModel}, ${m.cores} cores${m.virtualized ? ' (virtual machine)' : ''}`],
    ['memory', `${m.memoryGiB} GiB`],
    ['kernel / OS', `${m.kernel} / ${m.os}`],
    ['node', m.node],
    ['load average (1/5/15 min) at start / end', `${load(m.loadAvgStart)} &nbsp;|&nbsp; ${load(m.loadAvgEnd)}`],
    ['git commit', g.commit ? `<code>${esc(g.commit)}</code>${g.branch ? ` on ${esc(g.branch)}` : ''}: ${esc(g.subject ?? '')}` : 'n/a'],
    ['working tree', g.dirty === null ? 'n/a' : g.dirty ? `dirty (${g.changed.length}${g.changed.length >= 50 ? '+' : ''} changed paths: ${esc(g.changed.slice(0, 12).join(', '))}${g.changed.length > 12 ? ', ...' : ''})` : 'clean'],
    ['results', `<code>${esc(report.runDir)}</code> (each bench's log and JSON), <code>${esc(report.json)}</code>`],
  ];
  for (const [k, v] of rows) parts.push(`<tr><th>${esc(k)}</th><td>${k === 'memory' || k === 'node' || k === 'kernel / OS' || k === 'CPU' ? esc(v) : v}</td></tr>`);
  parts.push('</table>');
  parts.push('<p class="muted">The machine is shared: the load average and each bench\'s machine CPU below include whatever else ran. Compare figures from one run side by side; absolute times drift between runs.</p>');

  parts.push('<h2>Benches</h2><table><tr><th>bench</th><th>status</th><th>wall s</th><th>machine CPU %</th><th>load before / after (1 min)</th><th>key figures</th></tr>');
  for (const b of report.benches) {
    const figs = b.figures.length ? `<table>${b.figures.map((f) => `<tr><td>${esc(f.label)}</td><td>${esc(f.value)}</td></tr>`).join('')}</table>` : b.status === 'not run' ? '' : '<span class="muted">no figures (no readable JSON)</span>';
    const err = b.error ? `<div class="failed">${esc(b.error.split('\n').slice(0, 3).join(' | ').slice(0, 400))}</div>` : '';
    parts.push(
      `<tr><td><b>${esc(b.name)}</b><br><span class="muted">${esc(b.title)}<br><code>npm run ${esc(b.script)}</code></span></td><td>${statusCell(b)}</td><td class="num">${f0(b.wallS)}</td><td class="num">${f0(b.machineCpuPct)}</td>` +
        `<td class="num">${b.loadAvgBefore ? f1(b.loadAvgBefore[0]) : 'n/a'} / ${b.loadAvgAfter ? f1(b.loadAvgAfter[0]) : 'n/a'}</td><td>${err}${figs}</td></tr>`,
    );
  }
  parts.push('</table>');
  if (report.unknownScripts.length) parts.push(`<p class="muted">bench scripts in package.json that this runner does not know (not run): ${esc(report.unknownScripts.join(', '))}</p>`);

  parts.push('<h2>Plots</h2>');
  for (const p of plots) {
    // The SVG carries its own title; a plot not drawn gets it as a heading.
    parts.push(`<figure id="${esc(p.id)}">`);
    parts.push(p.svg ?? `<h3>${esc(p.title)}</h3><p class="notrun">Not drawn: ${esc(p.missing ?? 'no data')}.</p>`);
    parts.push(`<figcaption class="caption">${esc(p.caption)}</figcaption></figure>`);
  }

  if (failed.length) {
    parts.push('<h2>Failures</h2>');
    for (const b of failed) {
      parts.push(`<h3>${esc(b.name)}: ${esc((b.error ?? 'failed').split('\n')[0] ?? '')}</h3>`);
      if (b.error && b.error.includes('\n')) parts.push(`<pre>${esc(b.error)}</pre>`);
      parts.push(`<p class="muted">exit code ${b.exitCode ?? 'n/a'}${b.signal ? `, signal ${esc(b.signal)}` : ''}; log <code>${esc(b.log ?? 'n/a')}</code>; its last lines:</p><pre>${esc(b.logTail ?? '')}</pre>`);
    }
  }

  if (report.mode === 'quick') {
    parts.push('<h2>What quick mode left out</h2><ul>');
    for (const l of report.leftOut) parts.push(`<li>${esc(l)}</li>`);
    parts.push('</ul>');
  }
  parts.push('<h2>Settings given to each bench</h2><table><tr><th>bench</th><th>file</th><th>environment set by the runner</th></tr>');
  for (const b of report.benches) parts.push(`<tr><td>${esc(b.name)}</td><td><code>${esc(b.file)}</code></td><td><code>${esc(Object.entries(b.env).map(([k, v]) => `${k}=${v}`).join(' ') || '(defaults)')}</code></td></tr>`);
  parts.push('</table><p class="muted">Every bench also gets BENCH_RESULTS_DIR (where it writes its JSON). The full JSON of each bench is in the report\'s JSON file, under benches[].results.</p>');
  parts.push('</body></html>');
  return parts.join('\n');
}
