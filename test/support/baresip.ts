// baresip as a real SIP caller in tests: a headless config per call (its own port range, a WAV as the microphone,
// what it heard recorded), always under `timeout` and killed when the test ends, and sox to script what it says.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface BaresipOptions {
  /** The SIP URI to dial, e.g. `sip:+15550100@127.0.0.2:5070`. */
  target: string;
  /** The caller's microphone: a 16-bit mono WAV (8 kHz); the call is hung up when it ends. */
  wav: string;
  /** Where baresip listens (127.0.0.1 in tests) and its RTP port range. */
  sipPort: number;
  rtpPorts: [number, number];
  /** Codecs offered, in order. */
  codecs?: ('pcmu' | 'pcma')[];
  /** `mand`: offer SDES-SRTP only (RTP/SAVP). */
  srtp?: 'mand';
  /** Account user and optional digest credentials. */
  user?: string;
  auth?: { username: string; password: string };
  /** Hard limit on the whole call, seconds. */
  timeoutS?: number;
  /** More account parameters, e.g. `call_transfer=no` (refuse REFER). */
  accountParams?: string[];
}

export interface BaresipResult {
  code: number | null;
  log: string;
  /** What baresip heard (decoded, 16-bit WAV at 8 kHz), when a call was established. */
  heard: string | null;
  established: boolean;
}

const running = new Set<ChildProcess>();

/** Kills every baresip still running (call from afterEach/afterAll: a stray one retries its BYE for 30 s). */
export function killBaresips(): void {
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

/** What a headless baresip needs in its config: where it listens, its RTP ports, its microphone WAV and modules. */
export interface BaresipConfig {
  sipPort: number;
  rtpPorts: [number, number];
  wav: string;
  srtp?: boolean;
}

/** Writes `dir/config` for a headless baresip (sndfile records into `dir/rec`) and returns the recording directory. */
export function writeBaresipConfig(dir: string, o: BaresipConfig): string {
  const rec = path.join(dir, 'rec');
  execFileSync('mkdir', ['-p', rec]);
  const modules = ['g711.so', 'aufile.so', 'sndfile.so', ...(o.srtp ? ['srtp.so'] : [])].map((m) => `module\t\t\t${m}`).join('\n');
  writeFileSync(
    path.join(dir, 'config'),
    [
      'poll_method\t\tepoll',
      `sip_listen\t\t127.0.0.1:${o.sipPort}`,
      'net_interface\t\t127.0.0.1',
      'audio_player\t\taufile,/dev/null',
      'audio_alert\t\taufile,/dev/null',
      `audio_source\t\taufile,${o.wav}`,
      'ausrc_srate\t\t8000',
      'auplay_srate\t\t8000',
      'ausrc_channels\t\t1',
      'auplay_channels\t\t1',
      `rtp_ports\t\t${o.rtpPorts[0]}-${o.rtpPorts[1]}`,
      'module_path\t\t/usr/lib/baresip/modules',
      modules,
      'module_tmp\t\tuuid.so',
      'module_tmp\t\taccount.so',
      'module_app\t\tmenu.so',
      `snd_path\t\t${rec}`,
      '',
    ].join('\n'),
  );
  return rec;
}

export async function baresipCall(o: BaresipOptions): Promise<BaresipResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'parley-baresip-'));
  const rec = writeBaresipConfig(dir, { sipPort: o.sipPort, rtpPorts: o.rtpPorts, wav: o.wav, srtp: !!o.srtp });
  const params = [`audio_codecs=${(o.codecs ?? ['pcmu', 'pcma']).join(',')}`, 'regint=0', ...(o.srtp ? [`mediaenc=srtp-${o.srtp}`] : [])];
  if (o.auth) params.push(`auth_user=${o.auth.username}`, `auth_pass=${o.auth.password}`);
  params.push(...(o.accountParams ?? []));
  writeFileSync(path.join(dir, 'accounts'), `<sip:${o.user ?? 'caller'}@127.0.0.1>;${params.join(';')}\n`);
  const limit = o.timeoutS ?? 30;
  const proc = spawn('timeout', ['-s', 'KILL', String(limit + 5), 'baresip', '-f', dir, '-e', `/dial ${o.target}`, '-t', String(limit)], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(proc);
  let log = '';
  proc.stdout?.on('data', (c: Buffer) => (log += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (log += c.toString()));
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
  running.delete(proc);
  const dec = readdirSync(rec).find((f) => f.endsWith('-dec.wav'));
  return { code, log, heard: dec ? path.join(rec, dec) : null, established: /Call established/.test(log) };
}

/** A caller's script as one 8 kHz WAV: silences (seconds) and speech WAVs in order (sox). */
export function callerScript(parts: ({ silence: number } | { wav: string })[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'parley-caller-'));
  const pieces = parts.map((p, i) => {
    if ('wav' in p) {
      const out = path.join(dir, `${i}.wav`);
      execFileSync('sox', [p.wav, '-r', '8000', '-c', '1', '-b', '16', out]);
      return out;
    }
    const out = path.join(dir, `${i}.wav`);
    execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', out, 'trim', '0', String(p.silence)]);
    return out;
  });
  const script = path.join(dir, 'script.wav');
  execFileSync('sox', [...pieces, script]);
  return script;
}
