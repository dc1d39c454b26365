// SDES-SRTP (RFC 4568 key params, RFC 3711 AES_CM_128_HMAC_SHA1_80): key params, and protect/unprotect of RTP and RTCP
// packets over werift-rtp's SrtpSession/SrtcpSession (interoperates with baresip).
import { randomBytes } from 'node:crypto';
import { ProtectionProfileAes128CmHmacSha1_80, RtpHeader, SrtcpSession, SrtpSession } from 'werift-rtp';
import { RTP_HEADER_SIZE } from './rtp.js';

export const SRTP_SUITE = 'AES_CM_128_HMAC_SHA1_80' as const;
export type SrtpSuite = typeof SRTP_SUITE;

const KEY_BYTES = 16;
const SALT_BYTES = 14;
const TAG_BYTES = 10;

export interface SrtpParams {
  suite: SrtpSuite;
  /** The peer's key params (`inline:<base64 key||salt>[|lifetime][|mki:len]`): what it encrypts with. */
  remoteKeyParams: string;
  /** Ours: what we encrypt with. */
  localKeyParams: string;
}

/** Fresh key params: `inline:` and 30 random bytes (16-byte master key, 14-byte salt) in base64. */
export function generateKeyParams(): string {
  return `inline:${randomBytes(KEY_BYTES + SALT_BYTES).toString('base64')}`;
}

/**
 * The master key and salt of SDES key params; null when malformed or when they carry an MKI (not supported: every packet
 * would carry it). A lifetime (`|2^31`) is accepted and ignored: a call never comes close to it.
 */
export function parseKeyParams(keyParams: string): { key: Buffer; salt: Buffer } | null {
  const m = /^inline:([A-Za-z0-9+/]+={0,2})(\|[^|]*)?(\|[^|]*)?$/.exec(keyParams.trim());
  if (!m) return null;
  const extras = [m[2], m[3]].filter((x): x is string => x !== undefined).map((x) => x.slice(1));
  if (extras.some((x) => x.includes(':'))) return null; // MKI:length
  if (extras.length > 1 || extras.some((x) => !/^(\d+|2\^\d+)$/.test(x))) return null;
  const raw = Buffer.from(m[1]!, 'base64');
  if (raw.length !== KEY_BYTES + SALT_BYTES) return null;
  return { key: raw.subarray(0, KEY_BYTES), salt: raw.subarray(KEY_BYTES) };
}

/** One call's SRTP contexts: ours for sending, the peer's for receiving. */
export class SrtpTransform {
  private readonly rtp: SrtpSession;
  private readonly rtcp: SrtcpSession;

  constructor(params: Pick<SrtpParams, 'remoteKeyParams' | 'localKeyParams'>) {
    const local = parseKeyParams(params.localKeyParams);
    const remote = parseKeyParams(params.remoteKeyParams);
    if (!local) throw new RangeError('invalid local SRTP key params');
    if (!remote) throw new RangeError('invalid remote SRTP key params');
    const config = {
      keys: { localMasterKey: local.key, localMasterSalt: local.salt, remoteMasterKey: remote.key, remoteMasterSalt: remote.salt },
      profile: ProtectionProfileAes128CmHmacSha1_80,
    };
    this.rtp = new SrtpSession(config);
    this.rtcp = new SrtcpSession(config);
  }

  /** Encrypts and authenticates a plain RTP packet. */
  protect(rtpPacket: Buffer): Buffer {
    if (rtpPacket.length < RTP_HEADER_SIZE) throw new RangeError('RTP packet too short');
    const header = RtpHeader.deSerialize(rtpPacket);
    return this.rtp.encrypt(rtpPacket.subarray(header.payloadOffset), header);
  }

  /** Authenticates and decrypts an SRTP packet into plain RTP; null when it fails authentication or is malformed. */
  unprotect(srtpPacket: Buffer): Buffer | null {
    if (srtpPacket.length < RTP_HEADER_SIZE + TAG_BYTES) return null;
    try {
      return this.rtp.decrypt(srtpPacket);
    } catch {
      return null;
    }
  }

  /** Encrypts an RTCP compound packet into SRTCP. */
  protectRtcp(rtcpPacket: Buffer): Buffer {
    return this.rtcp.encrypt(rtcpPacket);
  }

  /** Decrypts an SRTCP packet; null when it fails authentication or is malformed. */
  unprotectRtcp(srtcpPacket: Buffer): Buffer | null {
    try {
      return this.rtcp.decrypt(srtcpPacket);
    } catch {
      return null;
    }
  }
}
