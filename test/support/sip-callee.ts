// Real far ends for outbound calls in tests: a sipp carrier (answers, refuses, rings, challenges; logs each INVITE's
// arrival to the microsecond) and a baresip callee (auto-answers, plays a WAV or silence, records what it hears).
// Each runs under `timeout` in its own process group, killed by stop() or by killCallees() when a test fails.
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeBaresipConfig } from './baresip.js';
import { freePort, PEER_HOST, sippResponse, sippScenario, sippSdp, udpBound } from './sip-peers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const running = new Set<ChildProcess>();

/** Kills a child's whole process group (`timeout` and the peer under it; SIGKILL to `timeout` alone orphans the peer). */
function killGroup(proc: ChildProcess): void {
  running.delete(proc);
  if (proc.pid === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
  try {
    process.kill(-proc.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Kills every carrier and callee still running (call from afterEach: a stray sipp keeps retransmitting). */
export function killCallees(): void {
  for (const p of [...running]) killGroup(p);
}

/** SIGTERM (passed on by `timeout`: sipp prints its counts, baresip closes its recordings), SIGKILL after a second. */
async function stopPeer(proc: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (proc.exitCode === null && proc.signalCode === null) {
    proc.kill('SIGTERM');
    await Promise.race([exited, sleep(1000)]);
  }
  killGroup(proc);
  await exited;
}

/** Starts `cmd` under `timeout` (KILL after `limitS`) as a process group leader, with its output collected. */
function spawnPeer(cmd: string, args: string[], limitS: number, cwd: string): { proc: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const proc = spawn('timeout', ['-s', 'KILL', String(limitS), cmd, ...args], { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(proc);
  let output = '';
  proc.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  // `close`, not `exit`: sipp's final counts are in the last of its output.
  const exited = new Promise<number | null>((resolve) =>
    proc.once('close', (code) => {
      killGroup(proc);
      resolve(code);
    }),
  );
  return { proc, output: () => output, exited };
}

/** One INVITE as the carrier saw it arrive (a digest retry is a second arrival with the same callId). */
export interface Arrival {
  /** Arrival time, epoch ms with microseconds as the fraction (sipp's clock). */
  at: number;
  callId: string;
  /** User part of the From URI (the caller ID). */
  from: string;
  /** User part of the Request-URI (the number dialled). */
  to: string;
  /** The Authorization header's value, '' when absent. */
  authorization: string;
}

export type CarrierAnswer = 'ok' | 486 | 480 | 603 | 503 | 'ring';

export interface CarrierOptions {
  /** UDP port on PEER_HOST (default: a free one). */
  port?: number;
  /**
   * `ok`: 180, 200 with a PCMU + telephone-event answer, then the call is held (see holdMs); a status: that final
   * response (after a 180 and ringMs when ringMs is given); `ring`: 180 and no answer (a CANCEL gets 200, the INVITE 487).
   */
  answer: CarrierAnswer;
  /** How long it rings (180) before the final response. */
  ringMs?: number;
  /** `ok`: hang up (BYE) this long after the ACK; absent: wait for the caller's BYE. A caller's BYE is answered 200 either way. */
  holdMs?: number;
  /** Answer the first INVITE of each call 401 (MD5 digest, no qop); the retry gets the answer if its credentials match, else 403. */
  challenge?: { username: string; password: string; realm?: string };
  /** Echo the RTP it receives back to the sender (sipp -rtp_echo). */
  rtpEcho?: boolean;
  /** sipp exits after this many calls (default 1000). */
  calls?: number;
  /** Hard limit on the run, seconds. */
  timeoutS: number;
  /** Run sipp under SCHED_FIFO (`chrt -f 20`; root only), so its arrival times are not late by CPU contention. */
  realtime?: boolean;
}

export interface CarrierResult {
  code: number | null;
  /** Calls that went through the scenario to its end, and calls that did not (sipp's final counts). */
  successful: number;
  failed: number;
  output: string;
  /** Every message sipp sent and received (its -trace_msg file). */
  messages: string;
}

export interface SippCarrier {
  port: number;
  /** INVITEs logged so far, in arrival order. */
  arrivals(): Arrival[];
  /** Resolves when sipp exits: after `calls` calls, at timeoutS, or on stop(). */
  done: Promise<CarrierResult>;
  stop(): Promise<CarrierResult>;
}

const REASONS: Record<number, string> = { 480: 'Temporarily Unavailable', 486: 'Busy Here', 503: 'Service Unavailable', 603: 'Decline' };
const TO_TAG = '01';

/**
 * Receives an INVITE, keeps its headers for later messages and logs its arrival (sipp's [last_*] are empty in actions,
 * and it refuses a variable that is set but never used: the log line uses them all).
 */
function inviteArrival(extra = ''): string {
  const grab = (header: string, variable: string) => `<ereg regexp=".*" search_in="hdr" header="${header}:" assign_to="${variable}" />`;
  return [
    '<recv request="INVITE" rrs="true"><action>',
    grab('From', 'from_hdr'),
    grab('To', 'to_hdr'),
    grab('CSeq', 'cseq'),
    grab('Authorization', 'authz'),
    '<ereg regexp="sips?:[^ ]*" search_in="msg" assign_to="ruri" />',
    '<log message="INVITE_ARRIVAL|[timestamp]|[call_id]|[$from_hdr]|[$ruri]|[$authz]|[$cseq]|[$to_hdr]|" />',
    extra,
    '</action></recv>',
  ].join('\n');
}

/** Rings: a 180, then `ringMs` of ringing. */
const ringing = (ringMs?: number) => [sippResponse('180 Ringing', { toTag: TO_TAG }), ...(ringMs ? [`<pause milliseconds="${ringMs}" />`] : [])];

/** The steps after the INVITE (or its authenticated retry) is accepted, by answer mode. */
function answerSteps(o: CarrierOptions): string[] {
  if (o.answer === 'ring') {
    return [
      ...ringing(),
      '<recv request="CANCEL" />',
      sippResponse('200 OK'),
      sippResponse('487 Request Terminated', { toTag: TO_TAG, cseq: '[$cseq]' }),
      '<recv request="ACK" />',
    ];
  }
  if (o.answer !== 'ok') {
    return [...(o.ringMs !== undefined ? ringing(o.ringMs) : []), sippResponse(`${o.answer} ${REASONS[o.answer]}`, { toTag: TO_TAG }), '<recv request="ACK" />'];
  }
  const answered = [...ringing(o.ringMs), sippResponse('200 OK', { toTag: TO_TAG, sdp: sippSdp('PCMU', true) }).replace('<send>', '<send retrans="500">'), '<recv request="ACK" />'];
  if (o.holdMs === undefined) return [...answered, '<recv request="BYE" />', sippResponse('200 OK')];
  const bye = [
    'BYE [next_url] SIP/2.0',
    'Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]',
    `From:[$to_hdr];tag=[pid]SIPpTag${TO_TAG}[call_number]`,
    'To:[$from_hdr]',
    'Call-ID: [call_id]',
    'CSeq: 1 BYE',
    'Contact: <sip:[local_ip]:[local_port];transport=[transport]>',
    'Max-Forwards: 70',
    'Content-Length: 0',
  ].join('\n');
  return [
    ...answered,
    `<recv request="BYE" timeout="${o.holdMs}" ontimeout="hangup" />`,
    sippResponse('200 OK').replace('<send>', '<send next="end">'),
    '<label id="hangup" />',
    `<send retrans="500"><![CDATA[\n${bye}\n\n]]></send>`,
    '<recv response="200" />',
    '<label id="end" />',
  ];
}

/** The carrier's scenario: the INVITE's arrival, the digest challenge when asked, then the answer mode's steps. */
function carrierScenario(o: CarrierOptions): string {
  if (!o.challenge) return sippScenario('carrier', [inviteArrival(), ...answerSteps(o)]);
  const { username, password, realm = 'carrier.test' } = o.challenge;
  return sippScenario('carrier', [
    inviteArrival(),
    sippResponse('401 Unauthorized', { toTag: TO_TAG, headers: [`WWW-Authenticate: Digest realm="${realm}", nonce="[pid]n[call_number]", algorithm=MD5`] }),
    '<recv request="ACK" />',
    inviteArrival(`<verifyauth assign_to="auth_ok" username="${username}" password="${password}" />`),
    '<nop hide="true" test="auth_ok" next="authorized" />',
    sippResponse('403 Forbidden', { toTag: TO_TAG }),
    '<recv request="ACK" next="finished" />',
    '<label id="authorized" />',
    ...answerSteps(o),
    '<label id="finished" />',
  ]);
}

/** Parses the carrier's INVITE_ARRIVAL log lines. */
function parseArrivals(log: string): Arrival[] {
  const out: Arrival[] = [];
  for (const line of log.split('\n')) {
    const f = line.split('|');
    if (f[0] !== 'INVITE_ARRIVAL' || f.length < 6) continue;
    // [timestamp] is "date<TAB>time<TAB>epoch.micros".
    const epoch = f[1]!.split('\t').pop()!;
    const from = /sips?:([^@;>]*)@/.exec(f[3]!)?.[1] ?? '';
    const to = /^sips?:([^@;]*)@/.exec(f[4]!)?.[1] ?? '';
    out.push({ at: Number(epoch) * 1000, callId: f[2]!, from, to, authorization: f[5]!.trim() });
  }
  return out;
}

/** sipp's cumulative count on a statistics line of its final screen ("Successful call | 0 | 3"). */
function finalCount(output: string, label: string): number {
  const lines = output.split('\n').filter((l) => l.trim().startsWith(label));
  const cells = lines.at(-1)?.split('|') ?? [];
  return Number(cells.at(-1)?.trim() ?? 0) || 0;
}

/**
 * Whether sipp can run under SCHED_FIFO here (root, chrt present). Tests and benches that measure the spacing of
 * INVITEs run the carrier so when they can: sipp timestamps an INVITE when it reads it, so on a loaded machine a
 * starved sipp logs a gap shorter than the one sent.
 */
export function canRunRealtime(): boolean {
  return spawnSync('chrt', ['-f', '20', 'true']).status === 0;
}

/** A sipp UAS on PEER_HOST acting as a carrier for outbound calls; calls are handled concurrently. Resolves once it listens. */
export async function startSippCarrier(o: CarrierOptions): Promise<SippCarrier> {
  const dir = mkdtempSync(path.join(tmpdir(), 'parley-carrier-'));
  const port = o.port ?? (await freePort(PEER_HOST));
  const scenario = path.join(dir, 'carrier.xml');
  writeFileSync(scenario, carrierScenario(o));
  const file = (f: string) => path.join(dir, f);
  const read = (f: string) => (existsSync(file(f)) ? readFileSync(file(f), 'utf8') : '');
  const args = [
    '-sf', scenario,
    '-i', PEER_HOST,
    '-p', String(port),
    '-mi', PEER_HOST,
    '-mp', String(await freePort(PEER_HOST)),
    '-t', 'u1',
    '-m', String(o.calls ?? 1000),
    '-nostdin',
    '-trace_msg', '-message_file', file('messages.log'),
    '-trace_logs', '-log_file', file('logs.log'),
    '-timeout', `${o.timeoutS}s`,
    ...(o.rtpEcho ? ['-rtp_echo'] : []),
  ];
  // Real-time scheduling (benches): sipp timestamps an INVITE when it reads it, so a sipp starved of CPU logs two
  // INVITEs that arrived apart as if they came together.
  const peer = o.realtime ? spawnPeer('chrt', ['-f', '20', 'sipp', ...args], o.timeoutS + 5, dir) : spawnPeer('sipp', args, o.timeoutS + 5, dir);
  const done = peer.exited.then((code) => {
    const output = peer.output();
    return { code, successful: finalCount(output, 'Successful call'), failed: finalCount(output, 'Failed call'), output, messages: read('messages.log') };
  });
  // Ready when the UDP port shows in /proc/net/udp (binding it ourselves could race sipp).
  for (let i = 0; i < 150 && peer.proc.exitCode === null && !udpBound(port); i++) await sleep(20);
  if (!udpBound(port)) {
    killGroup(peer.proc);
    throw new Error(`sipp carrier did not start on port ${port}:\n${peer.output()}`);
  }
  return {
    port,
    arrivals: () => parseArrivals(read('logs.log')),
    done,
    stop: async () => {
      await stopPeer(peer.proc, peer.exited);
      return done;
    },
  };
}

export interface CalleeOptions {
  /** SIP port on PEER_HOST (default: a free one). */
  port?: number;
  /** The Request-URI user it answers (default `callee`); baresip answers any other 404. */
  user?: string;
  /** What the callee says: a WAV (any rate, converted to 8 kHz mono), then silence; absent: silence. */
  wav?: string;
  /** Hang up when the WAV ends (default: stay on the line until the caller hangs up or timeoutS). */
  hangUpAfterWav?: boolean;
  /** The one codec it accepts (default pcmu). */
  codecs?: 'pcmu' | 'pcma';
  /** Hard limit on its life, seconds. */
  timeoutS: number;
}

export interface BaresipCallee {
  port: number;
  /** baresip's output so far. */
  log(): string;
  /** Resolves when the first call is established; rejects if baresip exits first. */
  established: Promise<void>;
  /** Resolves when baresip has exited: it quits once its first call has ended (or at timeoutS, or on stop()). */
  exited: Promise<number | null>;
  /** The path of what it heard (sndfile's `dump-*-dec.wav`, 16-bit 8 kHz), once the call has ended and baresip quit. */
  recording(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * baresip answering on PEER_HOST:port (`answermode=auto`, calls to `user`): one call, then it quits (SIGTERM, so sndfile
 * closes its recordings). Resolves once it is ready.
 */
export async function baresipCallee(o: CalleeOptions): Promise<BaresipCallee> {
  const dir = mkdtempSync(path.join(tmpdir(), 'parley-callee-'));
  const port = o.port ?? (await freePort(PEER_HOST));
  const rtpBase = 20000 + Math.floor(Math.random() * 100) * 100;
  // aufile ends the call when its file ends: pad the speech with silence for the callee's whole life unless asked not to.
  const source = path.join(dir, 'source.wav');
  const pad = o.hangUpAfterWav ? [] : ['pad', '0', String(o.timeoutS + 5)];
  if (o.wav) execFileSync('sox', [o.wav, '-r', '8000', '-c', '1', '-b', '16', source, ...pad]);
  else execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', source, 'trim', '0', String(o.timeoutS + 5)]);
  const rec = writeBaresipConfig(dir, { sipPort: port, rtpPorts: [rtpBase, rtpBase + 99], wav: source });
  writeFileSync(path.join(dir, 'accounts'), `<sip:${o.user ?? 'callee'}@${PEER_HOST}>;regint=0;answermode=auto;audio_codecs=${o.codecs ?? 'pcmu'}\n`);
  const peer = spawnPeer('baresip', ['-f', dir, '-t', String(o.timeoutS)], o.timeoutS + 5, dir);
  const waitFor = async (pattern: RegExp, what: string): Promise<void> => {
    while (!pattern.test(peer.output())) {
      if (peer.proc.exitCode !== null || peer.proc.signalCode !== null) throw new Error(`baresip exited before ${what}:\n${peer.output()}`);
      await sleep(20);
    }
  };
  await waitFor(/baresip is ready/, 'it was ready');
  const established = waitFor(/Call established/, 'a call was established');
  established.catch(() => undefined);
  // One call: when it ends, SIGTERM makes baresip quit cleanly (`timeout` passes the signal on).
  void established
    .then(() => waitFor(/: Call with \S+ terminated/, 'the call ended'))
    .then(() => peer.proc.kill('SIGTERM'))
    .catch(() => undefined);
  return {
    port,
    log: peer.output,
    established,
    exited: peer.exited,
    recording: async () => {
      await peer.exited;
      const dec = readdirSync(rec).find((f) => f.endsWith('-dec.wav'));
      if (!dec) throw new Error(`baresip recorded nothing:\n${peer.output()}`);
      return path.join(rec, dec);
    },
    stop: () => stopPeer(peer.proc, peer.exited),
  };
}
