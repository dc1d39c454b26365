// Real SIP peers for tests: free ports, sipp runs (built-in scenarios or files the test writes, from the scenario
// pieces here; always under `timeout`, killed when the test ends), and raw UDP/TCP SIP clients for hand-built and
// malformed messages.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import dgram from 'node:dgram';
import net from 'node:net';
import { randomBytes } from 'node:crypto';

/** Our stack binds here in tests; peers bind to PEER_HOST (the `sip` package's flow-token trap needs them apart). */
export const STACK_HOST = '127.0.0.2';
export const PEER_HOST = '127.0.0.1';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function canBind(host: string, port: number): Promise<boolean> {
  const udpFree = await new Promise<boolean>((resolve) => {
    const s = dgram.createSocket('udp4');
    s.once('error', () => resolve(false));
    s.bind(port, host, () => s.close(() => resolve(true)));
  });
  if (!udpFree) return false;
  return new Promise<boolean>((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/**
 * A random port free for both UDP and TCP on `host`, with the next one free too (baresip listens for SIP/TLS on
 * sip_listen + 1). From 61000-64999 (room above for a peer's next ports): clear of RTP's ranges (10000-20000, the
 * peers' 20000-29999) and of Linux's ephemeral ports (32768-60999), which an outgoing connection could take between
 * this check and the peer's bind (a CI run lost a baresip that way: its TLS port, 52285, was in use).
 */
export async function freePort(host = PEER_HOST): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = 61000 + Math.floor(Math.random() * 4000);
    if ((await canBind(host, port)) && (await canBind(host, port + 1))) return port;
  }
  throw new Error('no free port found');
}

const running = new Set<ChildProcess>();

/** Kills every peer still running (call from afterEach: a stray sipp keeps retransmitting). */
export function killPeers(): void {
  // The whole process group: SIGKILL to `timeout` alone would leave the peer under it running to its time limit.
  for (const p of running) {
    try {
      if (p.pid !== undefined) process.kill(-p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  running.clear();
}

export interface SippOptions {
  /** `uac`/`uas` (sipp's built-in scenarios) or the path of a scenario file. */
  scenario: 'uac' | 'uas' | string;
  /** host:port to call (UAC scenarios). */
  remote?: string;
  transport?: 'udp' | 'tcp';
  /** Local port (default: a free one). */
  port?: number;
  /** Request-URI user (`-s`). */
  service?: string;
  calls?: number;
  /** Pause of the built-in scenarios, ms (`-d`). */
  pauseMs?: number;
  /** `-key name value` pairs for scenario [name] keywords. */
  keys?: Record<string, string>;
  /** Hard limit on the run, seconds. */
  timeoutS?: number;
  extra?: string[];
}

export interface SippResult {
  code: number | null;
  output: string;
  /** Every message sipp sent and received (its -trace_msg file). */
  messages: string;
  /** Lines of its -trace_logs file (scenario <log> actions). */
  logs: string;
}

export interface SippRun {
  port: number;
  proc: ChildProcess;
  done: Promise<SippResult>;
  kill(): void;
}

/** Starts sipp on PEER_HOST; resolves once its port is bound (so a UAS is ready to be called). */
export async function startSipp(o: SippOptions): Promise<SippRun> {
  const dir = mkdtempSync(path.join(tmpdir(), 'parley-sipp-'));
  const port = o.port ?? (await freePort(PEER_HOST));
  const limit = o.timeoutS ?? 20;
  const scenario = o.scenario === 'uac' || o.scenario === 'uas' ? ['-sn', o.scenario] : ['-sf', o.scenario];
  const args = [
    ...(o.remote ? [o.remote] : []),
    ...scenario,
    '-i', PEER_HOST,
    '-p', String(port),
    '-t', o.transport === 'tcp' ? 't1' : 'u1',
    '-m', String(o.calls ?? 1),
    '-s', o.service ?? 'service',
    '-nostdin',
    '-trace_msg', '-message_file', path.join(dir, 'messages.log'),
    '-trace_logs', '-log_file', path.join(dir, 'logs.log'),
    '-trace_err', '-error_file', path.join(dir, 'errors.log'),
    '-timeout', `${limit}s`,
    '-timeout_error',
    ...(o.pauseMs !== undefined ? ['-d', String(o.pauseMs)] : []),
    ...Object.entries(o.keys ?? {}).flatMap(([k, v]) => ['-key', k, v]),
    ...(o.extra ?? []),
  ];
  const proc = spawn('timeout', ['-s', 'KILL', String(limit + 5), 'sipp', ...args], { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(proc);
  let output = '';
  proc.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  const read = (f: string) => (existsSync(path.join(dir, f)) ? readFileSync(path.join(dir, f), 'utf8') : '');
  const done = new Promise<SippResult>((resolve) =>
    proc.once('exit', (code) => {
      running.delete(proc);
      resolve({ code, output, messages: read('messages.log'), logs: read('logs.log') });
    }),
  );
  // Ready when the UDP port shows in /proc/net/udp (binding it ourselves could race sipp) or TCP accepts.
  for (let i = 0; i < 150 && proc.exitCode === null; i++) {
    if (o.transport === 'tcp' ? await tcpOpen(PEER_HOST, port) : udpBound(port)) break;
    await sleep(20);
  }
  const kill = () => {
    try {
      if (proc.pid !== undefined) process.kill(-proc.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  return { port, proc, done, kill };
}

/** True once some socket is bound to this UDP port (read from /proc/net/udp). */
export function udpBound(port: number): boolean {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/udp', 'utf8').split('\n').some((line) => line.trim().split(/\s+/)[1]?.endsWith(hex));
}

async function tcpOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Writes a scenario file for sipp and returns its path. */
export function writeScenario(name: string, xml: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'parley-scenario-')), `${name}.xml`);
  writeFileSync(file, xml);
  return file;
}

// Pieces of sipp scenarios, in sipp's own keywords ([last_Via:], [media_port], ...), so that each scenario a test writes
// spells out only the steps that make it different.

/** A scenario file's text: the XML head around `steps`. */
export function sippScenario(name: string, steps: string[]): string {
  return [`<?xml version="1.0" encoding="ISO-8859-1" ?>`, `<scenario name="${name}">`, ...steps, '</scenario>', ''].join('\n');
}

/** sipp's SDP for one PCMU or PCMA stream on its media port, with telephone-event/8000 on 101 when `dtmf`. */
export function sippSdp(codec: 'PCMU' | 'PCMA', dtmf = false): string {
  const pt = codec === 'PCMU' ? 0 : 8;
  return [
    'v=0',
    'o=user1 53655765 2353687637 IN IP[local_ip_type] [local_ip]',
    's=-',
    'c=IN IP[media_ip_type] [media_ip]',
    't=0 0',
    `m=audio [media_port] RTP/AVP ${pt}${dtmf ? ' 101' : ''}`,
    `a=rtpmap:${pt} ${codec}/8000`,
    ...(dtmf ? ['a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-15'] : []),
  ].join('\n');
}

/** A send step with `message` as it goes on the wire (sipp fills in [len] and the line ends). */
const sippSend = (message: string, attrs = '') => `<send${attrs}><![CDATA[\n${message}\n\n]]></send>`;

/**
 * sipp's response to the request it last received. `toTag` tags the To (sipp's tag for a new dialog, per call);
 * `cseq` stands in for the last request's CSeq (a 487 sent after the CANCEL answers the INVITE); with `sdp`, the
 * response carries it and sipp's Contact.
 */
export function sippResponse(status: string, o: { toTag?: string; cseq?: string; sdp?: string; headers?: string[] } = {}): string {
  return sippSend(
    [
      `SIP/2.0 ${status}`,
      '[last_Via:]',
      '[last_From:]',
      `[last_To:]${o.toTag ? `;tag=[pid]SIPpTag${o.toTag}[call_number]` : ''}`,
      '[last_Call-ID:]',
      o.cseq ? `CSeq: ${o.cseq}` : '[last_CSeq:]',
      ...(o.sdp ? ['Contact: <sip:[local_ip]:[local_port];transport=[transport]>', 'Content-Type: application/sdp'] : []),
      ...(o.headers ?? []),
      `Content-Length: ${o.sdp ? '[len]' : '0'}`,
      ...(o.sdp ? ['', o.sdp] : []),
    ].join('\n'),
  );
}

/**
 * A UAC's call set-up: INVITE sip:[service]@remote from `caller` offering `sdp` (retransmitted until answered), the
 * responses up to the 200 (its Record-Route kept), and the ACK to the 200's Contact.
 */
export function sippCallSetup(sdp: string, caller = 'sipp'): string[] {
  const from = `From: sipp <sip:${caller}@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]`;
  const via = 'Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]';
  const contact = 'Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>';
  return [
    sippSend(
      [
        'INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0', via, from, 'To: <sip:[service]@[remote_ip]:[remote_port]>', 'Call-ID: [call_id]',
        'CSeq: 1 INVITE', contact, 'Max-Forwards: 70', 'Content-Type: application/sdp', 'Content-Length: [len]', '', sdp,
      ].join('\n'),
      ' retrans="500"',
    ),
    '<recv response="100" optional="true" />',
    '<recv response="180" optional="true" />',
    '<recv response="200" rrs="true" />',
    sippSend(
      [
        'ACK [next_url] SIP/2.0', via, from, 'To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]', 'Call-ID: [call_id]', 'CSeq: 1 ACK',
        contact, 'Max-Forwards: 70', 'Content-Length: 0',
      ].join('\n'),
    ),
  ];
}

/** Waits for the other side's BYE (at most `timeoutMs` when given) and answers it 200. */
export function sippByeAnswered(timeoutMs?: number): string[] {
  return [`<recv request="BYE"${timeoutMs ? ` timeout="${timeoutMs}"` : ''} />`, sippResponse('200 OK')];
}

/** Plays an RTP capture (a pcap file) from sipp's media port to the other side's. */
export const sippPlayPcap = (file: string) => `<nop><action><exec play_pcap_audio="${file}" /></action></nop>`;

/** SIP messages in a sipp -trace_msg file, with the direction sipp logged. */
export function sippMessages(trace: string): (RawSipMessage & { direction: 'sent' | 'received' })[] {
  return trace
    .split(/^-{10,}.*$/m)
    .map((block) => block.replace(/\r/g, '').trim())
    .filter(Boolean)
    .map((block) => {
      const [head, ...rest] = block.split('\n');
      const direction = /received/.test(head ?? '') ? ('received' as const) : ('sent' as const);
      return { direction, ...parseRaw(rest.join('\n').trim()) };
    })
    .filter((m) => /^(SIP\/2\.0 \d{3}|[A-Z]+ \S+ SIP\/2\.0)/.test(m.startLine));
}

export interface RawSipMessage {
  at: number;
  text: string;
  startLine: string;
  status?: number;
  method?: string;
  /** First value of each header, names lower case. */
  headers: Record<string, string>;
  body: string;
}

/** A minimal parse for assertions (tests build SIP by hand; this reads what comes back). */
export function parseRaw(text: string, at = Date.now()): RawSipMessage {
  const cut = /\r?\n\r?\n/.exec(text);
  const head = cut ? text.slice(0, cut.index) : text;
  const body = cut ? text.slice(cut.index + cut[0].length) : '';
  const [startLine = '', ...lines] = head.split(/\r?\n/);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] ??= line.slice(i + 1).trim();
  }
  const status = /^SIP\/2\.0 (\d{3})/.exec(startLine)?.[1];
  return { at, text, startLine, status: status ? Number(status) : undefined, method: status ? undefined : startLine.split(' ')[0], headers, body };
}

/** A raw SIP peer on PEER_HOST (or another local address) over UDP or TCP: sends bytes as given, records everything it receives. */
export class RawSipPeer {
  readonly received: RawSipMessage[] = [];
  port = 0;
  private udp?: dgram.Socket;
  private tcp?: net.Socket;
  private tcpBuf = '';

  private constructor(
    readonly transport: 'udp' | 'tcp',
    private readonly remote: { host: string; port: number },
    /** The local address it sends from (Via, From and Contact carry it). */
    readonly host: string,
  ) {}

  static async open(transport: 'udp' | 'tcp', remote: { host: string; port: number }, host = PEER_HOST): Promise<RawSipPeer> {
    const peer = new RawSipPeer(transport, remote, host);
    if (transport === 'udp') {
      const s = dgram.createSocket('udp4');
      peer.udp = s;
      s.on('message', (m) => peer.received.push(parseRaw(m.toString('latin1'))));
      await new Promise<void>((r) => s.bind(0, host, () => r()));
      peer.port = s.address().port;
    } else {
      const s = net.connect({ host: remote.host, port: remote.port, localAddress: host });
      peer.tcp = s;
      s.on('error', () => undefined);
      s.on('data', (c: Buffer) => {
        peer.tcpBuf += c.toString('latin1');
        for (;;) {
          const end = peer.tcpBuf.indexOf('\r\n\r\n');
          if (end < 0) break;
          const len = Number(/\r\ncontent-length:\s*(\d+)/i.exec(peer.tcpBuf.slice(0, end))?.[1] ?? 0);
          if (peer.tcpBuf.length < end + 4 + len) break;
          peer.received.push(parseRaw(peer.tcpBuf.slice(0, end + 4 + len)));
          peer.tcpBuf = peer.tcpBuf.slice(end + 4 + len).replace(/^(\r\n)+/, '');
        }
      });
      await new Promise<void>((resolve, reject) => {
        s.once('connect', () => resolve());
        s.once('error', reject);
      });
      peer.port = s.localPort ?? 0;
    }
    return peer;
  }

  get closed(): boolean {
    return this.tcp ? this.tcp.destroyed : false;
  }

  send(data: string | Buffer): void {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    if (this.udp) this.udp.send(bytes, this.remote.port, this.remote.host);
    else if (this.tcp && !this.tcp.destroyed) this.tcp.write(bytes);
  }

  /** Resolves with the first received message (from `since` on) that matches. */
  async waitFor(match: (m: RawSipMessage) => boolean, timeoutMs = 5000, since = 0): Promise<RawSipMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.slice(since).find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching SIP message within ${timeoutMs} ms; got:\n${this.received.map((m) => m.startLine).join('\n')}`);
      await sleep(10);
    }
  }

  close(): void {
    this.udp?.close();
    this.tcp?.destroy();
  }
}

export interface RawRequest {
  method: string;
  uri: string;
  callId?: string;
  fromTag?: string;
  toTag?: string;
  cseq?: number;
  branch?: string;
  /** Contact URI (default: the peer itself). */
  contact?: string;
  headers?: string[];
  body?: string;
}

/** A request as text from a RawSipPeer (its Via and Contact), with a correct Content-Length. */
export function rawRequest(peer: RawSipPeer, r: RawRequest): string {
  const body = r.body ?? '';
  const transport = peer.transport.toUpperCase();
  return [
    `${r.method} ${r.uri} SIP/2.0`,
    `Via: SIP/2.0/${transport} ${peer.host}:${peer.port};branch=${r.branch ?? newBranch()};rport`,
    `From: <sip:tester@${peer.host}>;tag=${r.fromTag ?? 'tester'}`,
    `To: <${r.uri}>${r.toTag ? `;tag=${r.toTag}` : ''}`,
    `Call-ID: ${r.callId ?? newBranch()}`,
    `CSeq: ${r.cseq ?? 1} ${r.method}`,
    `Contact: <${r.contact ?? `sip:tester@${peer.host}:${peer.port}${peer.transport === 'tcp' ? ';transport=tcp' : ''}`}>`,
    'Max-Forwards: 70',
    ...(r.headers ?? []),
    `Content-Length: ${Buffer.byteLength(body, 'latin1')}`,
    '',
    body,
  ].join('\r\n');
}

export function newBranch(): string {
  return `z9hG4bK${randomBytes(8).toString('hex')}`;
}

/** A plain PCMU offer from a peer. */
export function sdpOffer(host = PEER_HOST, port = 40000): string {
  return ['v=0', `o=- 1 1 IN IP4 ${host}`, 's=-', `c=IN IP4 ${host}`, 't=0 0', `m=audio ${port} RTP/AVP 0 101`, 'a=rtpmap:0 PCMU/8000', 'a=rtpmap:101 telephone-event/8000', ''].join('\r\n');
}
