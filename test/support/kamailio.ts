// Kamailio as a carrier's SIP proxy in tests: a stateful proxy with no database that takes calls from one customer
// address, record-routes them and relays them to our server; always under `timeout`, stopped when the test ends.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { udpBound } from './sip-peers.js';

export interface Carrier {
  host: string;
  port: number;
  /** Everything Kamailio logged so far. */
  log(): string;
}

const running = new Set<ChildProcess>();

/** Stops every Kamailio still running (SIGTERM to `timeout`, which passes it on; Kamailio then stops its children). */
export function stopCarriers(): void {
  for (const p of running) p.kill('SIGTERM');
  running.clear();
}

const config = (o: { host: string; port: number; customer: string; target: string }) => `#!KAMAILIO
debug=2
log_stderror=yes
children=1
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

request_route {
  if (!mf_process_maxfwd_header("10")) { sl_send_reply("483", "Too Many Hops"); exit; }
  if (has_totag()) {
    if (loose_route()) { t_relay(); exit; }
    if (method == "ACK") { if (t_check_trans()) t_relay(); exit; }
    sl_send_reply("404", "Not here");
    exit;
  }
  if (method == "CANCEL") { if (t_check_trans()) t_relay(); exit; }
  if ($si != "${o.customer}") { sl_send_reply("403", "Not a customer"); exit; }
  record_route();
  if (method == "INVITE") xlog("L_NOTICE", "CARRIER relays $rm $ru from $si:$sp\\n");
  $ru = "sip:" + $rU + "@${o.target}";
  t_relay();
}
`;

/** Starts Kamailio on host:port relaying calls from `customer` (an IP) to `target` (host:port); resolves once it listens. */
export async function startCarrier(o: { host: string; port: number; customer: string; target: string; timeoutS?: number }): Promise<Carrier> {
  const dir = mkdtempSync(path.join(tmpdir(), 'parley-kamailio-'));
  const cfg = path.join(dir, 'kamailio.cfg');
  writeFileSync(cfg, config(o));
  const args = ['-s', 'TERM', String(o.timeoutS ?? 60), 'kamailio', '-f', cfg, '-DD', '-E', '-m', '64', '-M', '8', '-w', dir, '-P', path.join(dir, 'kamailio.pid')];
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
  return { host: o.host, port: o.port, log: () => log };
}
