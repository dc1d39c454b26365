// Kamailio's dispatcher module in front of several servers, as a deployment runs it: new calls go round-robin over
// the servers (set 1), a server that does not answer (timeout, 408, 5xx) is skipped for the next one, servers are
// probed with OPTIONS so a stopped one leaves the rotation, and in-dialog requests follow the Record-Route.
// Always under `timeout`, stopped when the test ends.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { udpBound } from './sip-peers.js';

export interface DispatcherOptions {
  host: string;
  port: number;
  /** The servers, `host:port` each (SIP over UDP). */
  destinations: string[];
  /** Seconds between OPTIONS probes of each server (default 1). */
  pingIntervalS?: number;
  /** How long a server may stay silent to a request before it counts as down, ms (default 2000). */
  noReplyMs?: number;
  /** ds_select_dst's algorithm: 4 round-robin (default), 0 a hash of the Call-ID (a call's requests stay together). */
  algorithm?: 0 | 4;
  timeoutS?: number;
}

export interface Dispatcher {
  host: string;
  port: number;
  /** The config Kamailio runs (docs/several-servers.md shows the same text). */
  config: string;
  /** Everything Kamailio logged so far. */
  log(): string;
  /** Each destination's dispatcher state, e.g. `{ 'sip:127.0.0.2:5060': 'AP' }` (A active, I inactive; P probing). */
  states(): Promise<Record<string, string>>;
}

const running = new Set<ChildProcess>();
const run = promisify(execFile);

/** Stops every dispatcher still running (SIGTERM to `timeout`, which passes it on; Kamailio then stops its children). */
export function stopDispatchers(): void {
  for (const p of running) p.kill('SIGTERM');
  running.clear();
}

/** One `sip:host:port` line per server in set 1 (the list file's format: setid destination). */
export const dispatcherList = (destinations: string[]) => destinations.map((d) => `1 sip:${d}`).join('\n') + '\n';

/** The kamailio.cfg: `listFile` is the dispatcher list, `ctl` the control socket (kamcmd) or none. */
export function dispatcherConfig(o: { host: string; port: number; listFile: string; ctl?: string; pingIntervalS?: number; noReplyMs?: number; algorithm?: 0 | 4 }): string {
  const algorithm = o.algorithm ?? 4;
  return `#!KAMAILIO
debug=2
log_stderror=yes
children=2
disable_tcp=yes
auto_aliases=no
listen=udp:${o.host}:${o.port}
mpath="/usr/lib/x86_64-linux-gnu/kamailio/modules/"
loadmodule "tm.so"
loadmodule "sl.so"
loadmodule "rr.so"
loadmodule "pv.so"
loadmodule "xlog.so"
loadmodule "siputils.so"
loadmodule "maxfwd.so"
loadmodule "dispatcher.so"
${o.ctl ? `loadmodule "ctl.so"\nmodparam("ctl", "binrpc", "unix:${o.ctl}")\n` : ''}
# A server that sends nothing back (stopped, or killed) counts as failed after this long: the call moves on.
modparam("tm", "fr_timer", ${o.noReplyMs ?? 2000})
modparam("dispatcher", "list_file", "${o.listFile}")
# Flag 2: failover support (ds_select_dst keeps the other servers for ds_next_dst).
modparam("dispatcher", "flags", 2)
# OPTIONS to every server every ${o.pingIntervalS ?? 1} s (probing mode 1: active ones too); one miss makes a server
# inactive, one 200 makes it active again.
modparam("dispatcher", "ds_ping_method", "OPTIONS")
modparam("dispatcher", "ds_ping_from", "sip:dispatcher@${o.host}")
modparam("dispatcher", "ds_ping_interval", ${o.pingIntervalS ?? 1})
modparam("dispatcher", "ds_probing_mode", 1)
modparam("dispatcher", "ds_probing_threshold", 1)
modparam("dispatcher", "ds_inactive_threshold", 1)
modparam("dispatcher", "ds_ping_reply_codes", "class=2")

request_route {
  if (!mf_process_maxfwd_header("10")) { sl_send_reply("483", "Too Many Hops"); exit; }
  # In-dialog requests (ACK, BYE, re-INVITE...) follow the Record-Route to the server that answered.
  if (has_totag()) {
    if (loose_route()) { t_relay(); exit; }
    if (method == "ACK") { if (t_check_trans()) t_relay(); exit; }
    sl_send_reply("404", "Not here");
    exit;
  }
  if (method == "CANCEL") { if (t_check_trans()) t_relay(); exit; }
  if (method == "OPTIONS" && uri == myself) { sl_send_reply("200", "OK"); exit; }
  record_route();
  # ${algorithm === 4 ? 'Round-robin (algorithm 4)' : 'A hash of the Call-ID (algorithm 0)'} over the active servers of set 1.
  if (!ds_select_dst("1", "${algorithm}")) { sl_send_reply("503", "No Server Available"); exit; }
  xlog("L_NOTICE", "DISPATCH $rm $ru call $ci to $du\\n");
  t_on_failure("FAILOVER");
  if (!t_relay()) sl_reply_error();
}

# The chosen server failed (no reply in time, 408 or 5xx): mark it inactive (probing brings it back) and try the next.
failure_route[FAILOVER] {
  if (t_is_canceled()) exit;
  if (t_branch_timeout() || t_check_status("408|5[0-9][0-9]")) {
    ds_mark_dst("ip");
    if (ds_next_dst()) {
      xlog("L_NOTICE", "FAILOVER $rm $ru call $ci to $du\\n");
      t_on_failure("FAILOVER");
      t_relay();
      exit;
    }
  }
}
`;
}

/** Starts Kamailio's dispatcher on host:port over `destinations`; resolves once it listens. */
export async function startDispatcher(o: DispatcherOptions): Promise<Dispatcher> {
  const dir = mkdtempSync(path.join(tmpdir(), 'parley-dispatcher-'));
  const listFile = path.join(dir, 'dispatcher.list');
  const ctl = path.join(dir, 'kamailio_ctl');
  const cfg = path.join(dir, 'kamailio.cfg');
  const config = dispatcherConfig({ host: o.host, port: o.port, listFile, ctl, pingIntervalS: o.pingIntervalS, noReplyMs: o.noReplyMs, algorithm: o.algorithm });
  writeFileSync(listFile, dispatcherList(o.destinations));
  writeFileSync(cfg, config);
  const args = ['-s', 'TERM', String(o.timeoutS ?? 120), 'kamailio', '-f', cfg, '-DD', '-E', '-m', '64', '-M', '8', '-w', dir, '-P', path.join(dir, 'kamailio.pid')];
  const proc = spawn('timeout', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(proc);
  let log = '';
  proc.stdout?.on('data', (c: Buffer) => (log += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (log += c.toString()));
  proc.once('exit', () => running.delete(proc));
  for (let i = 0; i < 250 && !udpBound(o.port); i++) {
    if (proc.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  if (!udpBound(o.port)) throw new Error(`kamailio did not start:\n${log}`);
  return {
    host: o.host,
    port: o.port,
    config,
    log: () => log,
    async states() {
      const { stdout } = await run('timeout', ['5', 'kamcmd', '-s', `unix:${ctl}`, 'dispatcher.list']);
      return parseStates(stdout);
    },
  };
}

/** `dispatcher.list` as kamcmd prints it: each DEST's URI and FLAGS. */
function parseStates(text: string): Record<string, string> {
  const states: Record<string, string> = {};
  for (const m of text.matchAll(/URI:\s*(\S+)\s+FLAGS:\s*(\S+)/g)) states[m[1] as string] = m[2] as string;
  return states;
}
