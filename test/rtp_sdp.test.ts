// SDP offer/answer for the media leg: real offers from baresip and sipp, the mediaEncryption policy, the UAC side, and
// malformed SDP refused with 400/488 (never a throw).
import { describe, expect, it } from 'vitest';
import { acceptAnswer, buildOffer, negotiate, type MediaEncryption } from '../telephony/media/sdp.js';
import { parseKeyParams } from '../telephony/media/srtp.js';

const crlf = (s: string) => s.trim().split('\n').map((l) => l.trim()).join('\r\n') + '\r\n';

// Captured on this machine: baresip 1.0.0 dialling with audio_codecs=pcma,pcmu (plain), mediaenc=srtp (best effort:
// RTP/AVP with a crypto line) and mediaenc=srtp-mand (RTP/SAVP); sipp 3.6.1 `-sn uac` and its uac_pcap scenario.
// baresip's three offers differ only in origin, port, profile, codec order, SSRC and crypto key: rebuilt here from
// those, byte for byte as captured.
type G711 = 'PCMU' | 'PCMA';
const PT: Record<G711, number> = { PCMU: 0, PCMA: 8 };
const baresipOffer = (o: { origin: string; port: number; profile: 'RTP/AVP' | 'RTP/SAVP'; codecs: [G711, G711]; ssrc: number; key?: string }) =>
  [
    'v=0', `o=- ${o.origin} IN IP4 127.0.0.1`, 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', 'a=tool:baresip 1.0.0',
    `m=audio ${o.port} ${o.profile} ${o.codecs.map((c) => PT[c]).join(' ')} 101`,
    ...o.codecs.map((c) => `a=rtpmap:${PT[c]} ${c}/8000`),
    'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-15', 'a=sendrecv', 'a=label:1', 'a=rtcp-rsize', `a=ssrc:${o.ssrc} cname:sip:caller@127.0.0.1`,
    ...(o.key ? [`a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:${o.key}`] : []),
    'a=minptime:20', 'a=ptime:20', '',
  ].join('\r\n');
const BARESIP_PLAIN = baresipOffer({ origin: '1162241526 1007606586', port: 30052, profile: 'RTP/AVP', codecs: ['PCMA', 'PCMU'], ssrc: 337725830 });
const BARESIP_BEST_EFFORT = baresipOffer({
  origin: '568118820 279528683', port: 30054, profile: 'RTP/AVP', codecs: ['PCMU', 'PCMA'], ssrc: 708093557, key: 'PBj3pkwiSP2rCSA1D0KZ95632t8rtMdbEQt20UHo',
});
const BARESIP_SRTP_MAND = baresipOffer({
  origin: '1127600362 105904535', port: 30006, profile: 'RTP/SAVP', codecs: ['PCMU', 'PCMA'], ssrc: 2985757699, key: 'IsdnhbygVmCvJTTUDXGLQ7Sfs81PdR36tlAhHghv',
});
// sipp's two offers differ only in their media lines.
const sippOffer = (media: string[]) => ['v=0', 'o=user1 53655765 2353687637 IN IP4 127.0.0.1', 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', ...media, ''].join('\r\n');
const SIPP_UAC = sippOffer(['m=audio 6000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000']);
const SIPP_UAC_PCAP = sippOffer(['m=audio 6002 RTP/AVP 8 101', 'a=rtpmap:8 PCMA/8000', 'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-11,16']);

const local = { localAddress: '127.0.0.2', localPort: 10002 };
const answerLines = (sdp: string) => sdp.split('\r\n').filter((l) => l !== '' && !l.startsWith('o='));

describe('negotiate: answers real offers', () => {
  it('answers baresip plain in its codec order, with telephone-event echoed', () => {
    const r = negotiate(BARESIP_PLAIN, { encryption: 'allow', ...local });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect({ ...r, answerSdp: undefined }).toEqual({
      ok: true, answerSdp: undefined, codec: 'PCMA', payloadType: 8, dtmfPayloadType: 101, remote: { address: '127.0.0.1', port: 30052 },
      srtp: null, remoteSsrc: 337725830, direction: 'sendrecv',
    });
    expect(r.answerSdp.endsWith('\r\n')).toBe(true);
    expect(r.answerSdp).toMatch(/^v=0\r\no=parley \d+ 1 IN IP4 127\.0\.0\.2\r\n/);
    expect(answerLines(r.answerSdp)).toEqual([
      'v=0', 's=parley', 'c=IN IP4 127.0.0.2', 't=0 0', 'm=audio 10002 RTP/AVP 8 101', 'a=rtpmap:8 PCMA/8000',
      'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-15', 'a=ptime:20', 'a=sendrecv',
    ]);
  });

  it('answers sipp: PCMU alone with no telephone-event; PCMA with the DTMF keys of its fmtp', () => {
    const a = negotiate(SIPP_UAC, { encryption: 'disable', ...local });
    expect(a.ok && [a.codec, a.payloadType, a.dtmfPayloadType, a.remote, a.remoteSsrc]).toEqual(['PCMU', 0, null, { address: '127.0.0.1', port: 6000 }, null]);
    expect(a.ok && answerLines(a.answerSdp).slice(4)).toEqual(['m=audio 10002 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', 'a=ptime:20', 'a=sendrecv']);
    const b = negotiate(SIPP_UAC_PCAP, { encryption: 'allow', ...local });
    expect(b.ok && answerLines(b.answerSdp).slice(4)).toEqual([
      'm=audio 10002 RTP/AVP 8 101', 'a=rtpmap:8 PCMA/8000', 'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-11', 'a=ptime:20', 'a=sendrecv',
    ]);
  });

  it('answers baresip srtp-mand with RTP/SAVP, the same crypto tag and fresh 30-byte keys', () => {
    const r = negotiate(BARESIP_SRTP_MAND, { encryption: 'require', ...local });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.codec).toBe('PCMU');
    expect(r.srtp).toEqual({ suite: 'AES_CM_128_HMAC_SHA1_80', remoteKeyParams: 'inline:IsdnhbygVmCvJTTUDXGLQ7Sfs81PdR36tlAhHghv', localKeyParams: expect.stringMatching(/^inline:[A-Za-z0-9+/]{40}$/) });
    expect(parseKeyParams(r.srtp!.localKeyParams)!.key).toHaveLength(16);
    expect(answerLines(r.answerSdp).slice(4)).toEqual([
      'm=audio 10002 RTP/SAVP 0 101', 'a=rtpmap:0 PCMU/8000', 'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-15', 'a=ptime:20', 'a=sendrecv',
      `a=crypto:1 AES_CM_128_HMAC_SHA1_80 ${r.srtp!.localKeyParams}`,
    ]);
    const again = negotiate(BARESIP_SRTP_MAND, { encryption: 'require', ...local });
    expect(again.ok && again.srtp!.localKeyParams).not.toBe(r.srtp!.localKeyParams);
  });
});

describe('negotiate: mediaEncryption policy', () => {
  const cases: Array<[string, string, MediaEncryption, 'srtp' | 'plain' | 488]> = [
    ['plain', BARESIP_PLAIN, 'require', 488],
    ['plain', BARESIP_PLAIN, 'allow', 'plain'],
    ['plain', BARESIP_PLAIN, 'disable', 'plain'],
    ['best effort', BARESIP_BEST_EFFORT, 'require', 'srtp'],
    ['best effort', BARESIP_BEST_EFFORT, 'allow', 'srtp'],
    ['best effort', BARESIP_BEST_EFFORT, 'disable', 'plain'],
    ['SRTP-only', BARESIP_SRTP_MAND, 'require', 'srtp'],
    ['SRTP-only', BARESIP_SRTP_MAND, 'allow', 'srtp'],
    ['SRTP-only', BARESIP_SRTP_MAND, 'disable', 488],
  ];
  it.each(cases)('%s offer under %s -> %s', (_kind, offer, encryption, expected) => {
    const r = negotiate(offer, { encryption, ...local });
    if (expected === 488) {
      expect(r.ok).toBe(false);
      expect(!r.ok && r.status).toBe(488);
      expect(!r.ok && r.reason).toMatch(encryption === 'require' ? /plain RTP offer refused: this trunk requires SRTP/ : /SRTP-only offer \(RTP\/SAVP\) refused/);
      return;
    }
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const proto = offer === BARESIP_SRTP_MAND ? 'RTP/SAVP' : 'RTP/AVP';
    expect(r.answerSdp).toContain(`m=audio 10002 ${proto} `);
    expect(r.srtp !== null).toBe(expected === 'srtp');
    expect(r.answerSdp.includes('a=crypto:')).toBe(expected === 'srtp');
  });

  it('refuses an SRTP offer whose only suite or key params we cannot use', () => {
    const only32 = BARESIP_SRTP_MAND.replace('AES_CM_128_HMAC_SHA1_80', 'AES_CM_128_HMAC_SHA1_32');
    expect(negotiate(only32, { encryption: 'allow', ...local })).toEqual({ ok: false, status: 488, reason: 'no supported SRTP crypto suite offered (AES_CM_128_HMAC_SHA1_80 with inline key params)' });
    const withMki = BARESIP_SRTP_MAND.replace('R36tlAhHghv', 'R36tlAhHghv|2^20|1:4');
    expect(negotiate(withMki, { encryption: 'require', ...local }).ok).toBe(false);
    const withLifetime = BARESIP_SRTP_MAND.replace('R36tlAhHghv', 'R36tlAhHghv|2^31');
    expect(negotiate(withLifetime, { encryption: 'require', ...local }).ok).toBe(true);
    const shortKey = BARESIP_SRTP_MAND.replace('inline:IsdnhbygVmCvJTTUDXGLQ7Sfs81PdR36tlAhHghv', 'inline:AAAA');
    expect(negotiate(shortKey, { encryption: 'require', ...local }).ok).toBe(false);
    // A best-effort offer whose crypto is unusable is plain: refused under require, answered plain under allow.
    const beBad = BARESIP_BEST_EFFORT.replace('AES_CM_128_HMAC_SHA1_80', 'F8_128_HMAC_SHA1_80');
    expect(negotiate(beBad, { encryption: 'require', ...local })).toMatchObject({ ok: false, status: 488 });
    expect(negotiate(beBad, { encryption: 'allow', ...local })).toMatchObject({ ok: true, srtp: null });
  });
});

describe('negotiate: streams, directions, codecs', () => {
  it('rejects other streams with port 0 and keeps their position', () => {
    const offer = crlf(`
      v=0
      o=- 1 1 IN IP4 198.51.100.7
      s=-
      t=0 0
      m=video 40000 RTP/AVP 96
      c=IN IP4 198.51.100.7
      a=rtpmap:96 H264/90000
      m=audio 40002 RTP/AVP 18 8
      c=IN IP4 198.51.100.8
      a=rtpmap:18 G729/8000
      a=sendonly`);
    const r = negotiate(offer, { encryption: 'allow', ...local });
    expect(r.ok && answerLines(r.answerSdp).slice(4)).toEqual(['m=video 0 RTP/AVP 96', 'm=audio 10002 RTP/AVP 8', 'a=rtpmap:8 PCMA/8000', 'a=ptime:20', 'a=recvonly']);
    expect(r.ok && [r.remote, r.direction]).toEqual([{ address: '198.51.100.8', port: 40002 }, 'recvonly']);
  });

  it('maps directions (session-level too) and takes PCMU under a dynamic payload type', () => {
    const base = (extra: string, sessionAttr = '') =>
      `v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\n${sessionAttr}m=audio 5000 RTP/AVP 98\r\na=rtpmap:98 pcmu/8000\r\n${extra}`;
    expect(negotiate(base('a=recvonly\r\n'), { encryption: 'allow', ...local })).toMatchObject({ ok: true, direction: 'sendonly', codec: 'PCMU', payloadType: 98 });
    expect(negotiate(base('a=inactive\r\n'), { encryption: 'allow', ...local })).toMatchObject({ ok: true, direction: 'inactive' });
    expect(negotiate(base('', 'a=sendonly\r\n'), { encryption: 'allow', ...local })).toMatchObject({ ok: true, direction: 'recvonly' });
    // LF-only line ends are read too; the hold address 0.0.0.0 is passed through.
    expect(negotiate(base('').replace(/\r\n/g, '\n').replace('c=IN IP4 10.0.0.1', 'c=IN IP4 0.0.0.0'), { encryption: 'allow', ...local })).toMatchObject({
      ok: true, remote: { address: '0.0.0.0', port: 5000 },
    });
  });

  it('refuses offers without a usable audio stream or codec with 488', () => {
    const head = 'v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\n';
    expect(negotiate(head + 'm=audio 5000 RTP/AVP 18\r\na=rtpmap:18 G729/8000\r\n', { encryption: 'allow', ...local })).toEqual({
      ok: false, status: 488, reason: 'no supported codec offered (PCMU or PCMA at 8000 Hz)',
    });
    expect(negotiate(head + 'm=audio 5000 RTP/AVP 96\r\na=rtpmap:96 PCMU/16000\r\n', { encryption: 'allow', ...local })).toMatchObject({ ok: false, status: 488 });
    expect(negotiate(head + 'm=video 5000 RTP/AVP 96\r\n', { encryption: 'allow', ...local })).toEqual({ ok: false, status: 488, reason: 'no audio stream offered' });
    expect(negotiate(head + 'm=audio 0 RTP/AVP 0\r\n', { encryption: 'allow', ...local })).toEqual({ ok: false, status: 488, reason: 'no audio stream offered' });
    expect(negotiate(head + 'm=audio 5000 UDP/TLS/RTP/SAVPF 0\r\n', { encryption: 'allow', ...local })).toEqual({
      ok: false, status: 488, reason: 'unsupported media transport UDP/TLS/RTP/SAVPF (RTP/AVP or RTP/SAVP only)',
    });
    expect(negotiate(head.replace('c=IN IP4 10.0.0.1', 'c=IN IP4 pbx.example.com') + 'm=audio 5000 RTP/AVP 0\r\n', { encryption: 'allow', ...local })).toEqual({
      ok: false, status: 488, reason: 'connection address must be an IP address, got "pbx.example.com"',
    });
  });

  it('refuses malformed SDP with 400 and a reason', () => {
    const cases: Array<[unknown, string]> = [
      ['', 'empty SDP'],
      [undefined, 'empty SDP'],
      [42, 'empty SDP'],
      ['hello', 'SDP must start with v=0'],
      ['v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\nm=audio x RTP/AVP 0\r\n', 'malformed m= line: "audio x RTP/AVP 0"'],
      ['v=0\r\nm=audio 99999 RTP/AVP 0\r\n', 'malformed m= line: "audio 99999 RTP/AVP 0"'],
      ['v=0\r\nm=audio 5000 RTP/AVP\r\n', 'malformed m= line: "audio 5000 RTP/AVP"'],
      ['v=0\r\nc=IN IP4\r\nm=audio 5000 RTP/AVP 0\r\n', 'malformed c= line: "IN IP4"'],
      ['v=0\r\nm=audio 5000 RTP/AVP 0\r\n', 'no connection address (c=) for the audio stream'],
      ['v=0\r\nthis is not sdp\r\n', 'malformed SDP line: "this is not sdp"'],
    ];
    for (const [sdp, reason] of cases) expect(negotiate(sdp, { encryption: 'allow', ...local })).toEqual({ ok: false, status: 400, reason });
    // Longer than the bound: well-formed, only more than we take (488, as every SDP_LIMITS bound).
    expect(negotiate('v=0\r\n' + 'a=x\r\n'.repeat(5000), { encryption: 'allow', ...local })).toEqual({ ok: false, status: 488, reason: 'SDP longer than 16384 characters' });
  });

  it('never throws on mutated offers (2000 random corruptions of real ones)', () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const offers = [BARESIP_PLAIN, BARESIP_BEST_EFFORT, BARESIP_SRTP_MAND, SIPP_UAC_PCAP];
    const statuses = new Set<number | string>();
    for (let i = 0; i < 2000; i++) {
      const chars = [...offers[i % offers.length]!];
      for (let k = 1 + rand(6); k > 0; k--) {
        const at = rand(chars.length);
        const op = rand(3);
        if (op === 0) chars.splice(at, 1 + rand(8));
        else if (op === 1) chars[at] = String.fromCharCode(rand(256));
        else chars.splice(at, 0, ...'\r\n= :/|'.charAt(rand(7)));
      }
      const r = negotiate(chars.join(''), { encryption: (['allow', 'require', 'disable'] as const)[rand(3)]!, ...local });
      statuses.add(r.ok ? 'ok' : r.status);
      if (!r.ok) expect(r.reason.length).toBeGreaterThan(0);
    }
    expect([...statuses].sort()).toEqual([400, 488, 'ok']);
  });
});

describe('buildOffer / acceptAnswer (UAC side)', () => {
  it.each(['disable', 'allow', 'require'] as const)('offers under %s and accepts the answer negotiate() gives', (encryption) => {
    const offer = buildOffer({ encryption, localAddress: '127.0.0.2', localPort: 10010 });
    const proto = encryption === 'require' ? 'RTP/SAVP' : 'RTP/AVP';
    expect(answerLines(offer.sdp).slice(4, 10)).toEqual([
      `m=audio 10010 ${proto} 0 8 101`, 'a=rtpmap:0 PCMU/8000', 'a=rtpmap:8 PCMA/8000', 'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-15', 'a=ptime:20',
    ]);
    expect(offer.sdp.includes('a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:')).toBe(encryption !== 'disable');
    for (const peerPolicy of ['disable', 'allow', 'require'] as const) {
      const answer = negotiate(offer.sdp, { encryption: peerPolicy, localAddress: '127.0.0.1', localPort: 20000 });
      const refused = (encryption === 'require' && peerPolicy === 'disable') || (encryption === 'disable' && peerPolicy === 'require');
      expect(answer.ok).toBe(!refused);
      if (!answer.ok) continue;
      const accepted = acceptAnswer(answer.answerSdp, offer);
      const encrypted = encryption !== 'disable' && peerPolicy !== 'disable';
      expect(accepted).toEqual({
        ok: true, codec: 'PCMU', payloadType: 0, dtmfPayloadType: 101, remote: { address: '127.0.0.1', port: 20000 }, remoteSsrc: null, direction: 'sendrecv',
        srtp: encrypted ? { suite: 'AES_CM_128_HMAC_SHA1_80', localKeyParams: offer.localKeyParams, remoteKeyParams: answer.srtp!.localKeyParams } : null,
      });
      // The two sides' keys mirror each other.
      if (encrypted && accepted.ok) expect(answer.srtp!.remoteKeyParams).toBe(accepted.srtp!.localKeyParams);
    }
  });

  it('refuses answers that break the offer', () => {
    const plain = buildOffer({ encryption: 'disable', localAddress: '127.0.0.2', localPort: 10010, codecs: ['PCMA'], dtmfPayloadType: null });
    expect(plain.sdp).toContain('m=audio 10010 RTP/AVP 8\r\n');
    expect(acceptAnswer(BARESIP_BEST_EFFORT, plain)).toEqual({ ok: false, status: 488, reason: 'the answer has SRTP keys but we offered plain RTP' });
    expect(acceptAnswer(SIPP_UAC, plain)).toEqual({ ok: false, status: 488, reason: 'the answer has no codec we offered (PCMU or PCMA at 8000 Hz)' });
    const required = buildOffer({ encryption: 'require', localAddress: '127.0.0.2', localPort: 10010 });
    expect(acceptAnswer(BARESIP_PLAIN, required)).toEqual({ ok: false, status: 488, reason: 'the answer has no usable SRTP key (AES_CM_128_HMAC_SHA1_80)' });
    expect(acceptAnswer('garbage', required)).toEqual({ ok: false, status: 400, reason: 'SDP must start with v=0' });
    expect(acceptAnswer(SIPP_UAC.replace('m=audio 6000', 'm=audio 0'), plain)).toEqual({ ok: false, status: 488, reason: 'the answer accepts no audio stream' });
  });
});
