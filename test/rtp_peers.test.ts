// RtpSession against real peers on loopback: sipp plays its PCMA capture (30 ms packets) and RFC 4733 digit captures to us;
// baresip (srtp-mand) exchanges speech with us over SDES-SRTP both ways, and over plain PCMA.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ALAW_TO_LINEAR, linearToALaw, linearToMuLaw, MULAW_TO_LINEAR } from '../engine/audio/g711.js';
import { readWav } from '../engine/audio/wav.js';
import { PortAllocator } from '../telephony/media/ports.js';
import { decodeRtp } from '../telephony/media/rtp.js';
import { acceptAnswer, buildOffer, type Codec, type MediaEncryption } from '../telephony/media/sdp.js';
import { RtpSession } from '../telephony/media/session.js';
import { readPcapUdp } from './support/pcap.js';
import { sipCall } from './support/rtp-sip-peer.js';
import { freePort, killPeers, PEER_HOST, sippByeAnswered, sippPlayPcap, sippResponse, sippScenario, sippSdp, STACK_HOST, startSipp, writeScenario } from './support/sip-peers.js';

const SOUNDS = '/usr/share/asterisk/sounds/en_US_f_Allison';
const ports = new PortAllocator({ min: 42400, max: 42599 });
const tmp = mkdtempSync(join(tmpdir(), 'rtp-peers-'));
const children: ChildProcess[] = [];
const sessions: RtpSession[] = [];
afterEach(() => killPeers());
afterAll(() => {
  for (const s of sessions) s.close();
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
function run(cmd: string, args: string[], cwd: string): ChildProcess & { output: () => string } {
  const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return Object.assign(child, { output: () => out });
}
const exited = (c: ChildProcess) => new Promise<number | null>((r) => (c.exitCode !== null ? r(c.exitCode) : c.once('exit', (code) => r(code))));
const concat = (frames: Int16Array[]) => {
  const out = new Int16Array(frames.reduce((n, f) => n + f.length, 0));
  let o = 0;
  for (const f of frames) out.set(f, (o += f.length) - f.length);
  return out;
};
/** Offset (any sample) where needle occurs exactly in hay, or -1. */
function findExact(hay: Int16Array, needle: Int16Array): number {
  outer: for (let at = 0; at + needle.length <= hay.length; at++) {
    for (let i = 0; i < needle.length; i++) if (hay[at + i] !== needle[i]) continue outer;
    return at;
  }
  return -1;
}
/** Best normalised cross-correlation of needle against hay over all lags. */
function bestCorrelation(hay: Int16Array, needle: Int16Array): number {
  let best = 0;
  let nn = 0;
  for (const v of needle) nn += v * v;
  nn = Math.sqrt(nn);
  for (let lag = 0; lag + needle.length <= hay.length; lag++) {
    let dot = 0;
    let hh = 0;
    for (let i = 0; i < needle.length; i++) {
      dot += hay[lag + i]! * needle[i]!;
      hh += hay[lag + i]! * hay[lag + i]!;
    }
    if (hh > 0) best = Math.max(best, dot / (Math.sqrt(hh) * nn));
  }
  return best;
}
const wavInt16 = (path: string) => Int16Array.from(readWav(readFileSync(path)).samples, (v) => Math.max(-32768, Math.min(32767, Math.round(v * 32768))));
const g711 = (pcm: Int16Array, codec: Codec) =>
  codec === 'PCMU' ? pcm.map((v) => MULAW_TO_LINEAR[linearToMuLaw(v)]!) : pcm.map((v) => ALAW_TO_LINEAR[linearToALaw(v)]!);

const PCAPS = '/usr/share/sip-tester';
const SIPP_UAS = sippScenario('parley rtp test: answer, play PCMA capture and three RFC 4733 digits', [
  '<recv request="INVITE" />',
  sippResponse('200 OK', { toTag: '01', sdp: sippSdp('PCMA', true) }),
  '<recv request="ACK" />',
  sippPlayPcap(`${PCAPS}/g711a.pcap`),
  '<pause milliseconds="2500" />',
  sippPlayPcap(`${PCAPS}/dtmf_2833_1.pcap`),
  '<pause milliseconds="400" />',
  sippPlayPcap(`${PCAPS}/dtmf_2833_2.pcap`),
  '<pause milliseconds="400" />',
  sippPlayPcap(`${PCAPS}/dtmf_2833_pound.pcap`),
  ...sippByeAnswered(),
]);

describe('RtpSession with sipp', () => {
  it('plays sipp\'s PCMA capture (30 ms packets) exactly and reads its RFC 4733 digits', async () => {
    const mediaPort = await freePort();
    const sipp = await startSipp({ scenario: writeScenario('uas', SIPP_UAS), timeoutS: 25, extra: ['-mi', PEER_HOST, '-mp', String(mediaPort)] });
    const media = await RtpSession.bind({ localAddress: '127.0.0.2', ports });
    sessions.push(media);
    const heard: Int16Array[] = [];
    const digits: string[] = [];
    media.onAudio = (f) => heard.push(f);
    media.onDtmf = (d) => digits.push(d);
    const offer = buildOffer({ encryption: 'disable', localAddress: '127.0.0.2', localPort: media.localPort, codecs: ['PCMA', 'PCMU'] });
    const call = await sipCall({ host: PEER_HOST, port: sipp.port, localAddress: STACK_HOST, sdp: offer.sdp });
    try {
      expect(call.status).toBe(200);
      const answer = acceptAnswer(call.answerSdp, offer);
      expect(answer).toMatchObject({ ok: true, codec: 'PCMA', payloadType: 8, dtmfPayloadType: 101, remote: { address: '127.0.0.1', port: mediaPort }, srtp: null });
      if (!answer.ok) return;
      await media.start(answer);
      await waitFor(() => digits.length === 3, 10_000, 'three digits');
      expect(digits).toEqual(['1', '2', '#']);
    } finally {
      expect(await call.bye()).toBe(200);
      call.close();
    }
    const result = await sipp.done;
    expect(result.code, result.output).toBe(0);
    // What sipp played: the capture's A-law payloads back to back.
    const capture = readPcapUdp(`${PCAPS}/g711a.pcap`).map((d) => decodeRtp(d.payload)!);
    expect(capture[0]!.payload).toHaveLength(240);
    const played = concat(capture.map((p) => Int16Array.from(p.payload, (b) => ALAW_TO_LINEAR[b]!)));
    const got = concat(heard);
    // 2 s of the capture, from 0.2 s in, arrived sample-exact (30 ms packets re-cut into 20 ms frames).
    const at = findExact(got, played.subarray(1600, 1600 + 16000));
    expect(at).toBeGreaterThanOrEqual(0);
    const s = media.stats();
    console.log(`sipp: ${s.packetsIn} packets in, lost ${s.lost}, late ${s.late}, concealed ${s.concealed}, underruns ${s.underruns}; remote ${JSON.stringify(media.remote)}`);
    expect(s).toMatchObject({ lost: 0, late: 0, malformed: 0, dtmfIn: 3, latched: true });
  }, 30_000);
});

function baresipConfig(dir: string, sipPort: number, account: string, source: string): void {
  mkdirSync(join(dir, 'rec'), { recursive: true });
  const rtpBase = 30000 + (sipPort % 1000) * 20;
  writeFileSync(
    join(dir, 'config'),
    [
      'poll_method epoll', `sip_listen 127.0.0.1:${sipPort}`, 'net_interface 127.0.0.1', 'audio_player alsa,null', 'audio_alert alsa,null',
      `audio_source aufile,${source}`, 'ausrc_srate 8000', 'auplay_srate 8000', `rtp_ports ${rtpBase}-${rtpBase + 19}`, 'module_path /usr/lib/baresip/modules',
      'module g711.so', 'module alsa.so', 'module aufile.so', 'module sndfile.so', 'module srtp.so', `snd_path ${join(dir, 'rec')}`,
      'module_tmp uuid.so', 'module_tmp account.so', 'module_app menu.so', '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'accounts'), `${account}\n`);
}

describe('RtpSession with baresip', () => {
  const cases: Array<[string, MediaEncryption, string, Codec]> = [
    ['SDES-SRTP (srtp-mand, RTP/SAVP)', 'require', ';mediaenc=srtp-mand;audio_codecs=pcmu', 'PCMU'],
    ['plain PCMA', 'disable', ';audio_codecs=pcma', 'PCMA'],
  ];
  it.each(cases)('exchanges speech with baresip over %s, both ways', async (name, encryption, accountParams, codec) => {
    const dir = join(tmp, `baresip-${codec}`);
    const sipPort = await freePort();
    const theirSpeech = `${SOUNDS}/hello-world.wav`;
    baresipConfig(dir, sipPort, `<sip:callee@127.0.0.1>;regint=0;answermode=auto${accountParams}`, theirSpeech);
    const baresip = run('timeout', ['25', 'baresip', '-f', dir], dir);
    await waitFor(() => baresip.output().includes('baresip is ready'), 5000, 'baresip to start');
    const media = await RtpSession.bind({ localAddress: '127.0.0.2', ports });
    sessions.push(media);
    const heard: Int16Array[] = [];
    media.onAudio = (f) => heard.push(f);
    const offer = buildOffer({ encryption, localAddress: '127.0.0.2', localPort: media.localPort, codecs: [codec] });
    const call = await sipCall({ host: '127.0.0.1', port: sipPort, localAddress: '127.0.0.2', sdp: offer.sdp, user: 'callee' });
    expect(call.status).toBe(200);
    const answer = acceptAnswer(call.answerSdp, offer);
    expect(answer.ok).toBe(true);
    if (!answer.ok) return;
    expect(answer.codec).toBe(codec);
    expect(answer.srtp !== null).toBe(encryption === 'require');
    expect(call.answerSdp).toContain(encryption === 'require' ? 'RTP/SAVP' : 'RTP/AVP');
    await media.start(answer);
    const ours = wavInt16(`${SOUNDS}/auth-thankyou.wav`);
    await sleep(200);
    media.send(ours);
    await Promise.race([call.peerBye, sleep(4000)]); // baresip hangs up when its file ends
    await sleep(300);
    const stats = media.stats();
    media.close();
    if (!(await Promise.race([call.peerBye.then(() => true), sleep(10).then(() => false)]))) await call.bye();
    call.close();
    baresip.kill('SIGTERM');
    await exited(baresip);
    console.log(`baresip ${name}: ${stats.packetsIn} packets in, ${stats.packetsOut} out, SRTP failures ${stats.srtpFailures}, lost ${stats.lost}, concealed ${stats.concealed}`);
    expect(stats).toMatchObject({ srtpFailures: 0, malformed: 0, latched: true });
    expect(stats.packetsIn).toBeGreaterThan(50);
    // What we heard holds baresip's file, G.711-quantised.
    const theirs = g711(wavInt16(theirSpeech), codec);
    const got = concat(heard);
    const corr = bestCorrelation(got, theirs.subarray(2000, 6000));
    // What baresip heard (its decoder-side recording) holds our speech.
    const dec = readdirSync(join(dir, 'rec')).find((f) => f.endsWith('-dec.wav'));
    expect(dec).toBeDefined();
    const theyHeard = wavInt16(join(dir, 'rec', dec!));
    const corrTheirs = bestCorrelation(theyHeard, g711(ours, codec).subarray(1000, 5000));
    console.log(`baresip ${name}: correlation of what we heard ${corr.toFixed(4)}, of what baresip heard ${corrTheirs.toFixed(4)}`);
    expect(corr).toBeGreaterThan(0.999);
    expect(corrTheirs).toBeGreaterThan(0.999);
  }, 30_000);
});
