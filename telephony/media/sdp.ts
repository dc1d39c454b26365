// SDP offer/answer for a call's audio: PCMU or PCMA at 20 ms, telephone-event (RFC 4733), SDES-SRTP per the trunk's
// mediaEncryption. negotiate() answers an offer (UAS), buildOffer()/acceptAnswer() are the UAC side. Never throws.
//
// Encryption policy. An `RTP/SAVP` offer is SRTP-only; an `RTP/AVP` offer with a usable a=crypto line is best-effort SRTP
// (baresip's `mediaenc=srtp`), answered in kind (RTP/AVP with our crypto line); a plain offer has neither.
//   require: SRTP-only or best-effort -> SRTP; plain -> 488.
//   allow:   SRTP-only or best-effort -> SRTP; plain -> plain.
//   disable: SRTP-only -> 488; best-effort or plain -> plain (no crypto line in the answer).
//
// Media addresses (media-address.ts): an offer or answer any of whose c= lines (session or stream, IPv4 or IPv6) is
// link-local, cloud metadata, multicast, broadcast, reserved or unspecified other than the hold address is refused
// with 488; so is one beyond SDP_LIMITS. The hold address (0.0.0.0, ::) is passed on as such: the leg never sends there.
// checkSdp() applies the same rules to what a peer sends inside a dialog (re-INVITE, UPDATE, an answer in an ACK).
import { randomInt } from 'node:crypto';
import { isIPv6 } from 'node:net';
import {
  cryptoLinesOf, fmtpOf, parseSdp, payloadTypesOf, reverseDirection, rtpMapOf, ssrcOf, type CryptoLine, type MediaDirection,
  type ParsedSdp, type SdpError, type SdpMedia,
} from './sdp-parse.js';
import { holdAddress, refusedMediaAddress } from './media-address.js';
import { generateKeyParams, parseKeyParams, SRTP_SUITE, type SrtpParams } from './srtp.js';

export type { MediaDirection } from './sdp-parse.js';
export type Codec = 'PCMU' | 'PCMA';
export type MediaEncryption = 'disable' | 'allow' | 'require';

export const CODECS: readonly Codec[] = ['PCMU', 'PCMA'];
export const PTIME_MS = 20;
export const DEFAULT_DTMF_PAYLOAD_TYPE = 101;

/** What both sides agreed: enough to start an RtpSession. */
export interface MediaParams {
  codec: Codec;
  payloadType: number;
  /** telephone-event payload type, or null when the peer did not offer/accept it. */
  dtmfPayloadType: number | null;
  /** Where the SDP says to send RTP (symmetric latching may move it). */
  remote: { address: string; port: number };
  srtp: SrtpParams | null;
  /** The SSRC the peer announced with a=ssrc, or null. */
  remoteSsrc: number | null;
  /** Our direction: whether we send and/or receive. */
  direction: MediaDirection;
}

export interface NegotiatedAnswer extends MediaParams {
  ok: true;
  answerSdp: string;
}

export interface SdpRefusal extends SdpError {
  ok: false;
}

export interface NegotiateOptions {
  encryption: MediaEncryption;
  /** The address put in o= and c= (PARLEY_SIP_PUBLIC_ADDRESS). */
  localAddress: string;
  localPort: number;
  /** o= session id and version (a re-INVITE answer keeps the id and increments the version). */
  sessionId?: string;
  sessionVersion?: number;
}

const refuse = (status: 400 | 488, reason: string): SdpRefusal => ({ ok: false, status, reason });

/** A 488 for the first c= address our RTP may not be aimed at, or null. */
function refusedConnection(parsed: ParsedSdp): SdpRefusal | null {
  for (const address of parsed.connections) {
    const why = refusedMediaAddress(address);
    if (why) return refuse(488, `connection address refused: ${why}`);
  }
  return null;
}

/** Where the SDP says to send: its address (the hold address in canonical form, which the leg never sends to). */
const remoteOf = (address: string, port: number) => ({ address: holdAddress(address) ?? address, port });

/**
 * Checks an SDP a peer sends inside a dialog (a re-INVITE's or UPDATE's offer, an answer in an ACK): null when it may
 * be taken, else the refusal (400 malformed; 488 a refused address or beyond SDP_LIMITS). Hold (c=0.0.0.0, sendonly,
 * inactive) passes. It does not renegotiate: the call keeps the codec and keys it agreed.
 */
export function checkSdp(sdp: unknown): SdpRefusal | null {
  try {
    const parsed = parseSdp(sdp);
    if ('status' in parsed) return refuse(parsed.status, parsed.reason);
    return refusedConnection(parsed);
  } catch (err) {
    return refuse(400, `unreadable SDP (${(err as Error).message})`);
  }
}

const isSecureProto = (proto: string) => proto === 'RTP/SAVP' || proto === 'RTP/SAVPF';
const isRtpProto = (proto: string) => /^RTP\/S?AVPF?$/.test(proto);

/** The first payload type, in the stream's own order, that is one of `codecs` at 8000 Hz mono. */
function pickCodec(m: SdpMedia, codecs: readonly Codec[] = CODECS): { codec: Codec; payloadType: number } | null {
  for (const pt of payloadTypesOf(m)) {
    const map = rtpMapOf(m, pt);
    if (!map || map.clockRate !== 8000 || map.channels !== 1) continue;
    const name = map.name.toUpperCase();
    if ((codecs as readonly string[]).includes(name)) return { codec: name as Codec, payloadType: pt };
  }
  return null;
}

function pickDtmf(m: SdpMedia): number | null {
  for (const pt of payloadTypesOf(m)) {
    const map = rtpMapOf(m, pt);
    if (map && map.name.toLowerCase() === 'telephone-event' && map.clockRate === 8000) return pt;
  }
  return null;
}

/** A crypto line we can use: our suite, inline key params without MKI, no session parameters but a window-size hint. */
function pickCrypto(m: SdpMedia): CryptoLine | null {
  return (
    cryptoLinesOf(m).find((c) => c.suite === SRTP_SUITE && parseKeyParams(c.keyParams) !== null && c.sessionParams.every((p) => /^WSH=\d+$/.test(p))) ??
    null
  );
}

/** Events 0-15 (the DTMF keys) that the offer's fmtp allows, as an fmtp value; all of 0-15 when it gives none. */
function dtmfEvents(fmtp: string | null): string {
  if (!fmtp) return '0-15';
  const allowed = new Set<number>();
  for (const part of fmtp.split(',')) {
    const r = /^\s*(\d+)(?:\s*-\s*(\d+))?\s*$/.exec(part);
    if (!r) continue;
    for (let e = Number(r[1]); e <= Number(r[2] ?? r[1]) && e <= 15; e++) allowed.add(e);
  }
  const ranges: string[] = [];
  for (let e = 0; e <= 15; e++) {
    if (!allowed.has(e)) continue;
    let end = e;
    while (allowed.has(end + 1)) end++;
    ranges.push(end === e ? `${e}` : `${e}-${end}`);
    e = end;
  }
  return ranges.length ? ranges.join(',') : '0-15';
}

function originLines(address: string, sessionId: string | undefined, version: number | undefined): string[] {
  const ip = isIPv6(address) ? 'IP6' : 'IP4';
  return ['v=0', `o=parley ${sessionId ?? randomInt(1, 2 ** 31)} ${version ?? 1} IN ${ip} ${address}`, 's=parley', `c=IN ${ip} ${address}`, 't=0 0'];
}

function audioLines(port: number, proto: string, pt: number, codec: Codec, dtmf: number | null, dtmfFmtp: string, direction: MediaDirection): string[] {
  const lines = [`m=audio ${port} ${proto} ${pt}${dtmf === null ? '' : ` ${dtmf}`}`, `a=rtpmap:${pt} ${codec}/8000`];
  if (dtmf !== null) lines.push(`a=rtpmap:${dtmf} telephone-event/8000`, `a=fmtp:${dtmf} ${dtmfFmtp}`);
  lines.push(`a=ptime:${PTIME_MS}`, `a=${direction}`);
  return lines;
}

/** Answers an SDP offer under the trunk's encryption policy. */
export function negotiate(offerSdp: unknown, options: NegotiateOptions): NegotiatedAnswer | SdpRefusal {
  try {
    const parsed = parseSdp(offerSdp);
    if ('status' in parsed) return refuse(parsed.status, parsed.reason);
    const refusedAddress = refusedConnection(parsed);
    if (refusedAddress) return refusedAddress;
    const index = parsed.media.findIndex((m) => m.media === 'audio' && m.port !== 0 && isRtpProto(m.proto));
    if (index < 0) {
      const audio = parsed.media.find((m) => m.media === 'audio' && m.port !== 0);
      return refuse(488, audio ? `unsupported media transport ${audio.proto} (RTP/AVP or RTP/SAVP only)` : 'no audio stream offered');
    }
    const m = parsed.media[index]!;
    if (m.address === null) return refuse(400, 'no connection address (c=) for the audio stream');
    const secure = isSecureProto(m.proto);
    const crypto = pickCrypto(m);
    if (secure && options.encryption === 'disable') return refuse(488, `SRTP-only offer (${m.proto}) refused: media encryption is disabled on this trunk`);
    if (secure && !crypto) return refuse(488, `no supported SRTP crypto suite offered (${SRTP_SUITE} with inline key params)`);
    if (!crypto && options.encryption === 'require') return refuse(488, 'plain RTP offer refused: this trunk requires SRTP');
    const chosen = pickCodec(m);
    if (!chosen) return refuse(488, 'no supported codec offered (PCMU or PCMA at 8000 Hz)');
    const dtmf = pickDtmf(m);
    const direction = reverseDirection(m.direction);
    const srtp = crypto && options.encryption !== 'disable' ? { suite: SRTP_SUITE, remoteKeyParams: crypto.keyParams, localKeyParams: generateKeyParams() } : null;

    const lines = originLines(options.localAddress, options.sessionId, options.sessionVersion);
    parsed.media.forEach((other, i) => {
      if (i !== index) {
        lines.push(`m=${other.media} 0 ${other.proto} ${other.formats.join(' ')}`);
        return;
      }
      lines.push(...audioLines(options.localPort, m.proto, chosen.payloadType, chosen.codec, dtmf, dtmfEvents(dtmf === null ? null : fmtpOf(m, dtmf)), direction));
      if (srtp) lines.push(`a=crypto:${crypto!.tag} ${SRTP_SUITE} ${srtp.localKeyParams}`);
    });
    return {
      ok: true,
      answerSdp: lines.join('\r\n') + '\r\n',
      codec: chosen.codec,
      payloadType: chosen.payloadType,
      dtmfPayloadType: dtmf,
      remote: remoteOf(m.address, m.port),
      srtp,
      remoteSsrc: ssrcOf(m),
      direction,
    };
  } catch (err) {
    return refuse(400, `unreadable SDP (${(err as Error).message})`);
  }
}

export interface OfferOptions {
  encryption: MediaEncryption;
  localAddress: string;
  localPort: number;
  /** Codecs offered, in preference order (PCMU, PCMA). */
  codecs?: readonly Codec[];
  /** telephone-event payload type (101); null to offer none. */
  dtmfPayloadType?: number | null;
  sessionId?: string;
  sessionVersion?: number;
}

export interface BuiltOffer {
  sdp: string;
  /** Our key params when the offer carries a crypto line (require: RTP/SAVP; allow: best-effort RTP/AVP), else null. */
  localKeyParams: string | null;
  encryption: MediaEncryption;
  codecs: readonly Codec[];
}

/** Builds an offer for an outbound call (UAC). */
export function buildOffer(options: OfferOptions): BuiltOffer {
  const codecs = options.codecs?.length ? options.codecs : CODECS;
  const dtmf = options.dtmfPayloadType === undefined ? DEFAULT_DTMF_PAYLOAD_TYPE : options.dtmfPayloadType;
  const localKeyParams = options.encryption === 'disable' ? null : generateKeyParams();
  const proto = options.encryption === 'require' ? 'RTP/SAVP' : 'RTP/AVP';
  const pts = codecs.map((c) => (c === 'PCMU' ? 0 : 8));
  const lines = originLines(options.localAddress, options.sessionId, options.sessionVersion);
  lines.push(`m=audio ${options.localPort} ${proto} ${[...pts, ...(dtmf === null ? [] : [dtmf])].join(' ')}`);
  codecs.forEach((c, i) => lines.push(`a=rtpmap:${pts[i]} ${c}/8000`));
  if (dtmf !== null) lines.push(`a=rtpmap:${dtmf} telephone-event/8000`, `a=fmtp:${dtmf} 0-15`);
  lines.push(`a=ptime:${PTIME_MS}`, 'a=sendrecv');
  if (localKeyParams) lines.push(`a=crypto:1 ${SRTP_SUITE} ${localKeyParams}`);
  return { sdp: lines.join('\r\n') + '\r\n', localKeyParams, encryption: options.encryption, codecs };
}

/** Reads the answer to our offer (UAC). */
export function acceptAnswer(answerSdp: unknown, offer: BuiltOffer): ({ ok: true } & MediaParams) | SdpRefusal {
  try {
    const parsed = parseSdp(answerSdp);
    if ('status' in parsed) return refuse(parsed.status, parsed.reason);
    const refusedAddress = refusedConnection(parsed);
    if (refusedAddress) return refusedAddress;
    const m = parsed.media.find((x) => x.media === 'audio' && x.port !== 0 && isRtpProto(x.proto));
    if (!m) return refuse(488, 'the answer accepts no audio stream');
    if (m.address === null) return refuse(400, 'no connection address (c=) for the audio stream');
    const crypto = pickCrypto(m);
    if (crypto && !offer.localKeyParams) return refuse(488, 'the answer has SRTP keys but we offered plain RTP');
    if (!crypto && (isSecureProto(m.proto) || offer.encryption === 'require')) return refuse(488, `the answer has no usable SRTP key (${SRTP_SUITE})`);
    const chosen = pickCodec(m, offer.codecs);
    if (!chosen) return refuse(488, 'the answer has no codec we offered (PCMU or PCMA at 8000 Hz)');
    return {
      ok: true,
      codec: chosen.codec,
      payloadType: chosen.payloadType,
      dtmfPayloadType: pickDtmf(m),
      remote: remoteOf(m.address, m.port),
      srtp: crypto ? { suite: SRTP_SUITE, remoteKeyParams: crypto.keyParams, localKeyParams: offer.localKeyParams! } : null,
      remoteSsrc: ssrcOf(m),
      direction: reverseDirection(m.direction),
    };
  } catch (err) {
    return refuse(400, `unreadable SDP (${(err as Error).message})`);
  }
}
