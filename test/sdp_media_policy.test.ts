// Where an SDP may aim our RTP, and how much of an SDP we read (issue 34): offers and answers whose connection address
// (session- or stream-level c=, IPv4 or IPv6) is link-local, cloud metadata, multicast, broadcast, reserved or an
// unspecified address other than the hold address are refused with 488, as are SDPs beyond SDP_LIMITS; loopback,
// private and public addresses pass, and the hold address (0.0.0.0, ::) passes as such, for the leg never to send to.
import { describe, expect, it } from 'vitest';
import { acceptAnswer, buildOffer, checkSdp, negotiate } from '../telephony/media/sdp.js';
import { SDP_LIMITS, parseSdp } from '../telephony/media/sdp-parse.js';
import { holdAddress, refusedMediaAddress } from '../telephony/media/media-address.js';

const local = { localAddress: '127.0.0.2', localPort: 10002 };
const ipOf = (address: string) => (address.includes(':') ? 'IP6' : 'IP4');

/** A plain PCMU offer; `session` and `media` are the c= addresses (null: no such line), `extra` lines end the stream. */
function offer(o: { session?: string | null; media?: string | null; extra?: string[]; formats?: string } = {}): string {
  const session = o.session === undefined ? '198.51.100.7' : o.session;
  const media = o.media ?? null;
  return [
    'v=0', 'o=- 1 1 IN IP4 198.51.100.7', 's=-', ...(session === null ? [] : [`c=IN ${ipOf(session)} ${session}`]), 't=0 0',
    `m=audio 40000 RTP/AVP ${o.formats ?? '0 101'}`, ...(media === null ? [] : [`c=IN ${ipOf(media)} ${media}`]),
    'a=rtpmap:0 PCMU/8000', 'a=rtpmap:101 telephone-event/8000', ...(o.extra ?? []), '',
  ].join('\r\n');
}

/** Every kind refused, IPv4 and IPv6, with the kind the 488's reason names. */
const REFUSED: Array<[string, RegExp]> = [
  ['169.254.169.254', /cloud metadata/],
  ['fd00:ec2::254', /cloud metadata/],
  ['100.100.100.200', /cloud metadata/],
  ['168.63.129.16', /cloud metadata/],
  ['::ffff:169.254.169.254', /cloud metadata/],
  ['169.254.10.20', /link-local/],
  ['fe80::1', /link-local/],
  ['fe80::a00:27ff:fe4e:66a1%eth0', /link-local/],
  ['224.0.0.1', /multicast, broadcast or reserved/],
  ['239.1.2.3', /multicast, broadcast or reserved/],
  ['ff02::1', /multicast, broadcast or reserved/],
  ['ff0e::101', /multicast, broadcast or reserved/],
  ['255.255.255.255', /multicast, broadcast or reserved/],
  ['240.0.0.1', /multicast, broadcast or reserved/],
  ['0.1.2.3', /unspecified/],
  ['::ffff:0.0.0.0', /unspecified/],
];
/** Loopback, private (RFC 1918, CGNAT, unique local) and public addresses: our RTP may go there. */
const ALLOWED = ['127.0.0.1', '127.8.9.10', '10.0.0.1', '172.16.5.4', '192.168.1.20', '100.64.0.1', '198.51.100.7', '8.8.8.8', '::1', 'fd12:3456::1', '2001:db8::7'];

describe('media addresses (classified by engine/net/egress.ts)', () => {
  it('refuses link-local, metadata, multicast, broadcast, reserved and non-hold unspecified addresses; allows loopback, private, public and the hold address', () => {
    for (const [address, kind] of REFUSED) expect(refusedMediaAddress(address), address).toMatch(kind);
    for (const address of ALLOWED) expect(refusedMediaAddress(address), address).toBeNull();
    for (const address of ['0.0.0.0', '::', '0:0:0:0:0:0:0:0', '0::0']) expect(refusedMediaAddress(address), address).toBeNull();
    expect(refusedMediaAddress('pbx.example.com')).toMatch(/reserved/); // no IP: never a destination
  });

  it('knows the hold address in any spelling, and only it', () => {
    expect(['0.0.0.0', '::', '0:0:0:0:0:0:0:0', '0::0', '0.0.0.1', '::1', '::ffff:0.0.0.0', 'x'].map(holdAddress)).toEqual(['0.0.0.0', '::', '::', '::', null, null, null, null]);
  });
});

describe('negotiate (offers: INVITE)', () => {
  it.each(REFUSED)('refuses %s with 488, at the stream or the session level', (address, kind) => {
    for (const sdp of [offer({ media: address }), offer({ session: address }), offer({ session: address, media: '198.51.100.8' })]) {
      const r = negotiate(sdp, { encryption: 'allow', ...local });
      expect(r.ok, sdp).toBe(false);
      if (r.ok) continue;
      expect(r.status).toBe(488);
      expect(r.reason).toMatch(/^connection address refused: /);
      expect(r.reason).toMatch(kind);
    }
  });

  it('refuses a refused address on a stream it does not take (any c= line counts)', () => {
    const sdp = offer({ extra: ['m=video 40002 RTP/AVP 96', 'c=IN IP4 169.254.169.254', 'a=rtpmap:96 H264/90000'] });
    expect(negotiate(sdp, { encryption: 'allow', ...local })).toMatchObject({ ok: false, status: 488, reason: 'connection address refused: 169.254.169.254 is a cloud metadata address' });
    // A multicast address with a TTL (and a count) is judged by the address.
    expect(negotiate(offer({ media: '233.252.0.1/127/3' }), { encryption: 'allow', ...local })).toMatchObject({ ok: false, status: 488, reason: expect.stringMatching(/233\.252\.0\.1 is a multicast/) });
  });

  it.each(ALLOWED)('answers an offer to %s and sends there', (address) => {
    const r = negotiate(offer({ media: address }), { encryption: 'allow', ...local });
    expect(r).toMatchObject({ ok: true, remote: { address, port: 40000 } });
  });

  it('takes the hold address (0.0.0.0, :: in any spelling) as it does today, canonical, for the leg never to send to', () => {
    for (const [address, canonical] of [['0.0.0.0', '0.0.0.0'], ['::', '::'], ['0:0:0:0:0:0:0:0', '::']] as const) {
      for (const direction of ['a=sendonly', 'a=inactive', 'a=sendrecv']) {
        const r = negotiate(offer({ media: address, extra: [direction] }), { encryption: 'allow', ...local });
        expect(r, `${address} ${direction}`).toMatchObject({ ok: true, remote: { address: canonical, port: 40000 } });
      }
    }
  });
});

describe('acceptAnswer (answers to our offers: outbound calls, transfers)', () => {
  const ours = buildOffer({ encryption: 'allow', localAddress: '127.0.0.2', localPort: 10010 });
  const answer = (address: string, direction = 'a=sendrecv') => offer({ media: address, formats: '0', extra: [direction] }).replace('a=rtpmap:101 telephone-event/8000\r\n', '');

  it.each(REFUSED)('refuses an answer to %s with 488', (address, kind) => {
    const r = acceptAnswer(answer(address), ours);
    expect(r).toMatchObject({ ok: false, status: 488, reason: expect.stringMatching(kind) });
  });

  it('accepts loopback and private answers, and a callee holding the call at once (c=0.0.0.0, sendonly)', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '::1']) expect(acceptAnswer(answer(address), ours), address).toMatchObject({ ok: true, remote: { address } });
    expect(acceptAnswer(answer('0.0.0.0', 'a=sendonly'), ours)).toMatchObject({ ok: true, remote: { address: '0.0.0.0' }, direction: 'recvonly' });
  });
});

describe('checkSdp (in-dialog: re-INVITE, UPDATE, an answer in an ACK)', () => {
  it('passes hold re-offers (c=0.0.0.0, a=sendonly, a=inactive) and ordinary ones', () => {
    for (const sdp of [offer({ session: '0.0.0.0' }), offer({ media: '::' }), offer({ extra: ['a=sendonly'] }), offer({ extra: ['a=inactive'] }), offer({ session: '127.0.0.1' })]) {
      expect(checkSdp(sdp), sdp).toBeNull();
    }
  });

  it('refuses a refused address with 488, a malformed SDP with 400 and an SDP beyond the limits with 488', () => {
    expect(checkSdp(offer({ media: '169.254.169.254' }))).toEqual({ ok: false, status: 488, reason: 'connection address refused: 169.254.169.254 is a cloud metadata address' });
    expect(checkSdp(offer({ session: 'ff02::1' }))).toMatchObject({ ok: false, status: 488 });
    expect(checkSdp('not sdp')).toEqual({ ok: false, status: 400, reason: 'SDP must start with v=0' });
    expect(checkSdp('v=0\r\nc=IN IP4\r\n')).toMatchObject({ ok: false, status: 400 });
    expect(checkSdp(offer({ formats: Array(65).fill('0').join(' ') }))).toMatchObject({ ok: false, status: 488, reason: expect.stringMatching(/more than 64 formats/) });
  });
});

describe('SDP_LIMITS', () => {
  const formats = (n: number) => Array.from({ length: n }, (_, i) => String(96 + (i % 32))).join(' ');
  const streams = (n: number) => Array.from({ length: n - 1 }, (_, i) => [`m=video ${40002 + 2 * i} RTP/AVP 96`, 'a=rtpmap:96 H264/90000']).flat();
  const attributes = (n: number) => Array.from({ length: n - 2 }, (_, i) => `a=x-attr-${i}`); // the offer has 2 rtpmap lines

  it('are 16384 characters, 8 streams, 64 formats on one m= line and 256 attributes', () => {
    expect(SDP_LIMITS).toEqual({ length: 16_384, media: 8, formats: 64, attributes: 256 });
  });

  it('takes an SDP at each bound and refuses one past it with 488 naming the bound', () => {
    const at = [offer({ formats: `0 101 ${formats(62)}` }), offer({ extra: streams(8) }), offer({ extra: attributes(256) })];
    for (const sdp of at) expect(negotiate(sdp, { encryption: 'allow', ...local }).ok).toBe(true);
    const past: Array<[string, string]> = [
      [offer({ formats: `0 101 ${formats(63)}` }), 'more than 64 formats on one m= line (65)'],
      [offer({ extra: streams(9) }), 'more than 8 media streams (m= lines)'],
      [offer({ extra: attributes(257) }), 'more than 256 attributes (a= lines)'],
    ];
    for (const [sdp, reason] of past) expect(negotiate(sdp, { encryption: 'allow', ...local })).toEqual({ ok: false, status: 488, reason });
  });

  it('refuses the 5,000-codec offer with 488: compact (under the length bound) and with an rtpmap per codec (over it)', () => {
    const compact = offer({ formats: Array(5000).fill('0').join(' ') });
    expect(compact.length).toBeLessThan(SDP_LIMITS.length);
    expect(negotiate(compact, { encryption: 'allow', ...local })).toEqual({ ok: false, status: 488, reason: 'more than 64 formats on one m= line (5000)' });
    const full = offer({ formats: formats(5000), extra: Array.from({ length: 5000 }, (_, i) => `a=rtpmap:${96 + (i % 32)} X${i}/8000`) });
    expect(negotiate(full, { encryption: 'allow', ...local })).toEqual({ ok: false, status: 488, reason: 'SDP longer than 16384 characters' });
  });

  it('reads a bounded SDP in well under a millisecond per kilobyte (no quadratic work at the bound)', () => {
    const big = offer({ formats: formats(64), extra: attributes(256).map((a) => a + '-' + 'v'.repeat(30)) });
    expect(big.length).toBeLessThan(SDP_LIMITS.length);
    const t = performance.now();
    for (let i = 0; i < 200; i++) parseSdp(big);
    expect((performance.now() - t) / 200).toBeLessThan(5);
  });
});
