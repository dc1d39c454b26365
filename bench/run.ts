// One bench command (issue 37 item 5): `npm run bench` runs every bench (the package.json bench:* scripts) one after
// another, never two at once (they measure timing), each as a child process (`tsx bench/<file>.ts`) with its output in
// a log file and its JSON in a directory of its own, then writes one self-contained HTML report with plots and one
// JSON file: bench/results/report-<ISO date>.html and .json (each bench's log and JSON under run-<ISO date>/).
//
//   npm run bench                        every bench with its defaults (the figures to quote; an hour or more)
//   npm run bench -- --quick             fewer levels, turns and trials: at most about 5 minutes on a 2-core machine
//   npm run bench -- --only agents,turns some benches (names as after `bench:`: publish, agents, telephony, ...)
//   npm run bench -- --list              the benches, their files and quick settings
//   --timeout S                          stop a bench after S seconds (default: 300 in quick mode, none in full mode)
//
// A bench that fails (exit code, signal, timeout or no JSON) does not stop the run: the report says which failed and
// why, with the tail of its log. The environment passes through to every bench; in quick mode the runner's settings
// for a bench (see QUICK below) take precedence over the same variables in the environment. Telephony runs without
// its outbound phase in both modes (BENCH_OUTBOUND=0): bench:outbound runs the same measurement right after it.
// BENCH_CACHE_DIR (default bench/.cache) is where the turn bench's corpus cache is looked for.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { machineJiffies } from './lib/prom.js';
import { keyFigures, renderHtml, reportPlots, type BenchRun, type GitState, type Machine, type Report } from './lib/report-html.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const RESULTS = path.join(ROOT, 'bench', 'results');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');
const CACHE_DIR = process.env.BENCH_CACHE_DIR ? path.resolve(process.env.BENCH_CACHE_DIR) : path.join(ROOT, 'bench', '.cache');

interface BenchDef {
  name: string;
  file: string;
  title: string;
  /** Set in every mode. */
  always?: Record<string, string>;
  /** Quick mode: the settings and what they leave out (a function: it may depend on the machine's caches). */
  quick: () => { env: Record<string, string>; leftOut: string };
}

/**
 * The turn bench's cache for a set: 'warm' when its corpus is built and every item it replays has a replay cached,
 * 'replays' when the corpus is built but replays are missing (replaying costs about a second an item), 'cold' when the
 * corpus itself is not built (minutes: speech synthesis and Whisper alignment).
 */
function turnCache(set: 'human8' | 'inserted'): 'warm' | 'replays' | 'cold' {
  const manifest = path.join(CACHE_DIR, set === 'human8' ? 'turn-corpus' : 'turn-corpus-inserted', 'manifest.json');
  try {
    type Item = { id: string; source: string; rate: number; speechEnd: number; pauses?: { category?: string }[] };
    const items = (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { items: Item[] }).items;
    // As bench/turns.ts picks them: human 8 kHz items whose speech ends within BENCH_MAX_TURN_S (15 s); of the inserted
    // set, the hesitations after a function word and after another word.
    const maxS = Number(process.env.BENCH_MAX_TURN_S ?? 15);
    const inSet = (i: Item) => set === 'human8' || ['after_function_word', 'after_other_word'].includes(i.pauses?.[0]?.category ?? '');
    const used = items.filter((i) => i.source === 'human' && i.rate === 8000 && i.speechEnd / i.rate <= maxS && inSet(i));
    return used.every((i) => fs.existsSync(path.join(CACHE_DIR, 'turn-replay', `${i.id}.json`))) ? 'warm' : 'replays';
  } catch {
    return 'cold';
  }
}

function turnsQuick(): { env: Record<string, string>; leftOut: string } {
  const human = turnCache('human8');
  const inserted = turnCache('inserted');
  const always = 'the synthesized evaluation set (espeak-ng, Flite) and barge-in (stop time, false barge-ins: about 10 minutes of real-time calls)';
  if (human === 'warm' && inserted === 'warm') return { env: { BENCH_SETS: 'human8,inserted', BENCH_BARGE: '0' }, leftOut: always };
  const why =
    human === 'cold'
      ? `its corpus cache (${path.relative(ROOT, CACHE_DIR)}/turn-corpus) was not built, so this run built it (several minutes)`
      : human === 'replays'
        ? 'the human set\'s replays were not all cached, so this run replayed them'
        : `the inserted-hesitation set is not cached (${inserted === 'cold' ? 'not built' : 'replays missing'}; \`npm run bench:turns\` builds it)`;
  return { env: { BENCH_SETS: 'human8', BENCH_BARGE: '0' }, leftOut: `${always}; and the inserted-hesitation set: ${why}` };
}

/** Every bench, in the order run: the short ones first, then the long real-time ones. */
const BENCHES: BenchDef[] = [
  { name: 'redaction', file: 'bench/redaction.ts', title: 'Redaction detector: recall and false positives', quick: () => ({ env: {}, leftOut: 'nothing (its defaults take about a second)' }) },
  {
    name: 'publish',
    file: 'bench/publish-latency.ts',
    title: 'Publishing an agent over HTTP, SQLite and PostgreSQL',
    quick: () => ({ env: { BENCH_ITERATIONS: '30', BENCH_WARMUP: '5' }, leftOut: '30 publishes per case instead of 200 (warm-up 5 instead of 10)' }),
  },
  {
    name: 'analytics',
    file: 'bench/analytics.ts',
    title: 'Analytics routes over 100,000 call records, SQLite and PostgreSQL',
    quick: () => ({ env: { BENCH_CALLS: '20000', BENCH_REPEATS: '10' }, leftOut: '20,000 calls instead of 100,000, 10 requests per route instead of 30' }),
  },
  {
    name: 'webhooks',
    file: 'bench/webhooks-tools.ts',
    title: 'Webhook deliveries per second, and what an api_call tool adds to a turn',
    quick: () => ({
      env: { BENCH_EVENTS: '300', BENCH_RATES: '250,max', BENCH_CALLS: '20', BENCH_CALL_CONCURRENCY: '1', BENCH_TOOL_TURNS: '20', BENCH_TOOL_SESSIONS: '4' },
      leftOut: '300 deliveries per direct batch instead of 2,000, offered rates 250/s and max only (not 100 and 500), 20 calls from 1 caller (not 120 from 1 and 8), 20 tool turns per variant in 4 sessions instead of 100 in 10',
    }),
  },
  { name: 'flood', file: 'bench/chat-flood.ts', title: 'One flooding chat client against /health and a bystander', quick: () => ({ env: { BENCH_FLOOD_MESSAGES: '500' }, leftOut: '500 flood messages instead of 2,000' }) },
  {
    name: 'audiences',
    file: 'bench/audience-upload.ts',
    title: 'Concurrent audience uploads against /health and memory',
    quick: () => ({ env: { BENCH_UPLOADS: '2', BENCH_ROWS: '20000' }, leftOut: '2 uploads of 20,000 rows instead of 6 of 100,000' }),
  },
  {
    name: 'kb-pdf',
    file: 'bench/kb-pdf.ts',
    title: 'Reading a 300-page PDF into a knowledge base, against /health',
    quick: () => ({ env: { BENCH_REPEAT: '1', BENCH_PAGES: '100' }, leftOut: 'one 100-page PDF instead of three of 300 pages' }),
  },
  {
    name: 'audience-members',
    file: 'bench/audience-members.ts',
    title: 'Adding 10,000 audience members in one JSON request, against /health',
    quick: () => ({ env: { BENCH_REPEAT: '1' }, leftOut: '1 request instead of 3' }),
  },
  {
    name: 'agents',
    file: 'bench/agent-sessions.ts',
    title: 'Voice sessions one machine holds, and per-turn latency',
    quick: () => ({
      env: { BENCH_LEVELS: '1,4,8', BENCH_TURNS: '1', BENCH_ALL_LEVELS: '1', BENCH_CHAT_LEVELS: '1,32', BENCH_CHAT_TURNS: '3' },
      leftOut: 'voice levels 1, 4 and 8 only (default 1 to 64, rising until one falls behind, then bisection), 1 turn per caller instead of 4 (so 1, 4 and 8 turns per level); chat levels 1 and 32 with 3 turns (default 1 to 128 with 5)',
    }),
  },
  {
    name: 'telephony',
    file: 'bench/telephony.ts',
    title: 'Phone calls (SIP/RTP) beside web calls, RTP send timing',
    always: { BENCH_OUTBOUND: '0' },
    quick: () => ({
      env: { BENCH_SETUP_CALLS: '12', BENCH_SETUP_RATE: '12', BENCH_LEVELS: '4', BENCH_TURNS: '1', BENCH_WARMUP_TURNS: '0', BENCH_HOST_NOISE_S: '2' },
      leftOut: 'one level of 4 calls with 1 turn per caller (default levels 1, 4, 8, 12, 16 with 16 turns at 1 call and 4 at the others), warm-up calls with the greeting only (no turn), 12 set-up calls instead of 60, 2 s host-noise probes instead of 10 s',
    }),
  },
  {
    name: 'outbound',
    file: 'bench/outbound-only.ts',
    title: 'Outbound dialer pacing, outbound answer -> first audio',
    quick: () => ({ env: { BENCH_OUT_CALLS: '60', BENCH_OUT_ANSWER_CALLS: '5' }, leftOut: '60 calls per pacing run instead of 150, 5 answered calls instead of 20' }),
  },
  {
    name: 'turns',
    file: 'bench/turns.ts',
    title: 'End-of-turn false cut-offs against the wait; barge-in',
    quick: turnsQuick,
  },
  {
    name: 'answer-detect',
    file: 'bench/answer-detect.ts',
    title: 'Answering-machine detection on recorded greetings',
    quick: () => ({ env: { BENCH_SETS: 'asterisk', BENCH_PACE: 'instant' }, leftOut: 'the synthesized (tuning) greetings, and real-time pacing: greetings run as fast as recognition allows, so decision times do not include recognition waiting on the audio clock' }),
  },
  {
    name: 'voices',
    file: 'bench/voices.ts',
    title: 'Built-in voices: round-trip WER through our recognizer, real-time factor',
    quick: () => ({ env: { BENCH_VOICES: 'slt,rhvoice-slt', BENCH_RTF_RUNS: '1' }, leftOut: 'voices slt and rhvoice-slt only (default 7), one real-time-factor pass instead of 3' }),
  },
  {
    name: 'whisper-batch',
    file: 'bench/whisper-batch.ts',
    title: 'Cheaper Whisper recognition: batching, a shorter window, thread layouts',
    quick: () => ({ env: { BENCH_PARTS: 'window', BENCH_LIMIT: '4' }, leftOut: 'the shorter-window part on 4 prompts only (default all 551); batching and thread layouts not run' }),
  },
  {
    name: 'console',
    file: 'bench/console.ts',
    title: 'The console in Chromium: load time, download, talk latency',
    quick: () => ({ env: { BENCH_LOADS: '2', BENCH_TALK_ROUNDS: '0' }, leftOut: 'talk latency in the browser beside the raw WebSocket (about a minute of real-time speech per round); 2 load rounds instead of 10' }),
  },
];

// ---------------------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------------------

function parseArgs(argv: string[]): { quick: boolean; only: string[] | null; list: boolean; timeoutS: number | null } {
  let quick = false;
  let only: string[] | null = null;
  let list = false;
  let timeoutS: number | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const value = () => {
      const eq = a.indexOf('=');
      if (eq >= 0) return a.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--quick') quick = true;
    else if (a === '--list') list = true;
    else if (a === '--only' || a.startsWith('--only=')) only = value().split(',').map((s) => s.trim().replace(/^bench:/, '')).filter(Boolean);
    else if (a === '--timeout' || a.startsWith('--timeout=')) {
      timeoutS = Number(value());
      if (!(timeoutS > 0)) throw new Error('--timeout: seconds > 0');
    } else if (a === '--help' || a === '-h') {
      console.log(fs.readFileSync(import.meta.filename, 'utf8').split('\n').filter((l) => l.startsWith('//')).map((l) => l.slice(3)).join('\n'));
      process.exit(0);
    } else throw new Error(`unknown argument ${a} (--quick, --only a,b, --list, --timeout S)`);
  }
  if (only) {
    const unknown = only.filter((n) => !BENCHES.some((b) => b.name === n));
    if (unknown.length) throw new Error(`--only: unknown bench ${unknown.join(', ')} (known: ${BENCHES.map((b) => b.name).join(', ')})`);
  }
  return { quick, only, list, timeoutS };
}

// ---------------------------------------------------------------------------------------------------------
// The machine and the build
// ---------------------------------------------------------------------------------------------------------

const loadAvg = () => os.loadavg().map((x) => Math.round(x * 100) / 100);

function machine(): Machine {
  let osName = `${os.type()} ${os.version()}`;
  try {
    osName = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(fs.readFileSync('/etc/os-release', 'utf8'))?.[1] ?? osName;
  } catch {
    /* not Linux */
  }
  let virtualized: boolean | null = null;
  try {
    virtualized = /^flags\s*:.*\bhypervisor\b/m.test(fs.readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    /* unknown */
  }
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    kernel: os.release(),
    os: osName,
    virtualized,
    node: process.version,
    hostname: os.hostname(),
    loadAvgStart: loadAvg(),
    loadAvgEnd: null,
  };
}

function git(): GitState {
  const run = (args: string[]) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return null;
    }
  };
  const status = run(['status', '--porcelain']);
  return {
    commit: run(['rev-parse', 'HEAD']),
    subject: run(['log', '-1', '--format=%s'])?.slice(0, 160) ?? null,
    branch: run(['rev-parse', '--abbrev-ref', 'HEAD']),
    dirty: status === null ? null : status.length > 0,
    changed: status ? status.split('\n').slice(0, 50).map((l) => l.slice(3)) : [],
  };
}

/** bench:* scripts of package.json that BENCHES does not list. */
function unknownScripts(): string[] {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
    const files = new Set(BENCHES.map((b) => b.file));
    return Object.entries(pkg.scripts ?? {})
      .filter(([name, cmd]) => name.startsWith('bench:') && !files.has(/bench\/[\w.-]+\.ts/.exec(cmd)?.[0] ?? ''))
      .map(([name]) => name);
  } catch {
    return [];
  }
}

// ---------------------------------------------------------------------------------------------------------
// Running one bench
// ---------------------------------------------------------------------------------------------------------

let current: { pid: number } | null = null;
let interrupted = false;

/** Signals the bench's whole process group (its servers, sipp, Chromium ...). */
function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* gone */
  }
}

function tailOf(file: string, lines: number): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    // Progress lines that rewrite themselves (\r) and npm's noise are not worth the space.
    return text.replace(/\r(?!\n)/g, '\n').split('\n').filter((l) => !l.startsWith('npm warn')).slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** Why a bench failed, from its log: its own failure line when it printed one. */
function failureLine(file: string): string | null {
  const lines = tailOf(file, 400).split('\n');
  const failed = lines.findIndex((l) => /^RUN FAILED:/.test(l));
  if (failed >= 0) return lines.slice(failed, failed + 3).join('\n').replace(/^RUN FAILED:\s*/, '');
  const err = [...lines].reverse().find((l) => /\b(Error|error:|ERR_|ECONN|EADDR|Cannot|cannot|failed)\b/.test(l));
  return err?.trim().slice(0, 500) ?? null;
}

async function runBench(def: BenchDef, quick: boolean, runDir: string, timeoutS: number | null): Promise<BenchRun> {
  const q = quick ? def.quick() : null;
  const env: Record<string, string> = { ...(def.always ?? {}), ...(q?.env ?? {}) };
  const outDir = path.join(runDir, def.name);
  fs.mkdirSync(outDir, { recursive: true });
  const logFile = path.join(runDir, `${def.name}.log`);
  const run: BenchRun = {
    name: def.name,
    script: `bench:${def.name}`,
    file: def.file,
    title: def.title,
    env,
    leftOut: q?.leftOut ?? null,
    status: 'failed',
    exitCode: null,
    signal: null,
    startedAt: new Date().toISOString(),
    wallS: null,
    loadAvgBefore: loadAvg(),
    loadAvgAfter: null,
    machineCpuPct: null,
    log: path.relative(ROOT, logFile),
    resultFiles: [],
    results: {},
    figures: [],
    error: null,
    logTail: null,
  };
  const fd = fs.openSync(logFile, 'w');
  fs.writeSync(fd, `# ${def.file} ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')}\n`);
  const jiffies0 = machineJiffies();
  const t0 = performance.now();
  let timedOut = false;
  const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    const child = spawn(TSX, [def.file], {
      cwd: ROOT,
      env: { ...process.env, ...env, BENCH_RESULTS_DIR: outDir },
      stdio: ['ignore', fd, fd],
      detached: true, // its own process group, so that a timeout or ^C stops its servers too
    });
    child.on('error', (err) => {
      fs.writeSync(fd, `\nrunner: could not start ${TSX}: ${err.message}\n`);
      resolve({ code: null, signal: null });
    });
    if (child.pid) current = { pid: child.pid };
    let timer: NodeJS.Timeout | undefined;
    if (timeoutS) {
      timer = setTimeout(() => {
        timedOut = true;
        if (child.pid) killGroup(child.pid, 'SIGTERM');
        setTimeout(() => child.pid && killGroup(child.pid, 'SIGKILL'), 15_000).unref();
      }, timeoutS * 1000);
    }
    child.on('exit', (c, s) => {
      clearTimeout(timer);
      current = null;
      // Whatever it left behind in its group (a server it did not stop) goes with it.
      if (child.pid) killGroup(child.pid, 'SIGKILL');
      resolve({ code: c, signal: s });
    });
  });
  fs.closeSync(fd);
  run.wallS = Math.round((performance.now() - t0) / 100) / 10;
  const jiffies1 = machineJiffies();
  const total = jiffies1.total - jiffies0.total;
  run.machineCpuPct = total > 0 ? Math.round(((total - (jiffies1.idle - jiffies0.idle)) / total) * 1000) / 10 : null;
  run.loadAvgAfter = loadAvg();
  run.exitCode = code;
  run.signal = signal;

  for (const f of fs.readdirSync(outDir).filter((n) => n.endsWith('.json')).sort()) {
    const file = path.join(outDir, f);
    run.resultFiles.push(path.relative(ROOT, file));
    try {
      run.results[f] = JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
    } catch (err) {
      run.error = `${f} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  const problems: string[] = [];
  if (timedOut) problems.push(`stopped after the ${timeoutS} s timeout`);
  else if (interrupted) problems.push('interrupted');
  else if (signal) problems.push(`killed by ${signal}`);
  else if (code !== 0) problems.push(`exit code ${code}`);
  if (!run.resultFiles.length) problems.push('no JSON result');
  if (run.error) problems.push(run.error);
  if (problems.length) {
    const why = failureLine(logFile);
    run.error = `${problems.join('; ')}${why ? `: ${why}` : ''}`;
    run.logTail = tailOf(logFile, 40);
  } else run.status = 'ok';
  run.figures = keyFigures(run);
  return run;
}

// ---------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.list) {
    for (const b of BENCHES) {
      const q = b.quick();
      console.log(`${b.name.padEnd(14)} ${b.file.padEnd(26)} ${b.title}`);
      console.log(`${''.padEnd(14)} quick: ${Object.entries({ ...(b.always ?? {}), ...q.env }).map(([k, v]) => `${k}=${v}`).join(' ') || '(defaults)'}`);
    }
    return;
  }
  const started = new Date();
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  const runDir = path.join(RESULTS, `run-${stamp}`);
  fs.mkdirSync(runDir, { recursive: true });
  const htmlFile = path.join(RESULTS, `report-${stamp}.html`);
  const jsonFile = path.join(RESULTS, `report-${stamp}.json`);
  const timeoutS = args.timeoutS ?? (args.quick ? 300 : null);
  const selected = BENCHES.filter((b) => !args.only || args.only.includes(b.name));
  const report: Report = {
    kind: 'parley-bench-report',
    version: 1,
    date: started.toISOString(),
    finishedAt: null,
    mode: args.quick ? 'quick' : 'full',
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    machine: machine(),
    git: git(),
    wallS: null,
    runDir: path.relative(ROOT, runDir),
    html: path.relative(ROOT, htmlFile),
    json: path.relative(ROOT, jsonFile),
    leftOut: [],
    unknownScripts: unknownScripts(),
    benches: [],
  };
  const onSignal = () => {
    if (interrupted) {
      if (current) killGroup(current.pid, 'SIGKILL');
      process.exit(130);
    }
    interrupted = true;
    console.log('\ninterrupted: stopping the running bench, then writing the report (^C again to quit at once)');
    if (current) killGroup(current.pid, 'SIGTERM');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const m = report.machine;
  console.log(`${report.mode} run of ${selected.length} bench(es) on ${m.cpuModel} x ${m.cores}, load ${m.loadAvgStart.join(' ')}; commit ${report.git.commit?.slice(0, 10) ?? 'n/a'}${report.git.dirty ? ' (dirty)' : ''}`);
  console.log(`logs and JSON: ${report.runDir}`);
  const t0 = performance.now();
  for (const [i, def] of selected.entries()) {
    if (interrupted) {
      report.benches.push({ name: def.name, script: `bench:${def.name}`, file: def.file, title: def.title, env: {}, leftOut: null, status: 'not run', exitCode: null, signal: null, startedAt: null, wallS: null, loadAvgBefore: null, loadAvgAfter: null, machineCpuPct: null, log: null, resultFiles: [], results: {}, figures: [], error: 'the run was interrupted', logTail: null });
      continue;
    }
    process.stdout.write(`[${String(i + 1).padStart(2)}/${selected.length}] ${def.name.padEnd(14)} `);
    const run = await runBench(def, args.quick, runDir, timeoutS);
    report.benches.push(run);
    if (run.leftOut) report.leftOut.push(`${run.name}: ${run.leftOut}`);
    console.log(`${run.status.padEnd(6)} ${String(run.wallS).padStart(6)} s${run.error ? `  ${run.error.split('\n')[0]?.slice(0, 160)}` : ''}`);
  }
  report.wallS = Math.round((performance.now() - t0) / 100) / 10;
  report.finishedAt = new Date().toISOString();
  report.machine.loadAvgEnd = loadAvg();
  if (args.quick) report.leftOut.push('telephony runs without its outbound phase in both modes: bench:outbound is the same measurement');

  const plots = reportPlots(report.benches);
  fs.writeFileSync(jsonFile, `${JSON.stringify({ ...report, plots: plots.map(({ svg: _svg, ...p }) => p) }, null, 1)}\n`);
  fs.writeFileSync(htmlFile, renderHtml(report, plots));
  const failed = report.benches.filter((b) => b.status !== 'ok');
  console.log(`\n${report.benches.length - failed.length}/${report.benches.length} benches ok in ${Math.round(report.wallS)} s${failed.length ? `; not ok: ${failed.map((b) => b.name).join(', ')}` : ''}`);
  console.log(`report: ${report.html}\n        ${report.json}`);
  if (failed.length) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(2);
});
