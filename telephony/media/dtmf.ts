// RFC 4733 telephone-events: parse and encode the 4-byte event payload, turn a stream of event packets into one digit per
// key press, and build the packets that send a digit.

export interface TelephoneEvent {
  /** Event code: 0-9, 10 (*), 11 (#), 12-15 (A-D). */
  event: number;
  /** E bit: the last packet(s) of the event. */
  end: boolean;
  /** Power level in -dBm0 (0-63). */
  volume: number;
  /** Duration so far, in timestamp units (1/8000 s for telephone-event/8000). */
  duration: number;
}

const DIGITS = '0123456789*#ABCD';

/** Parses a telephone-event payload (the first event of it); null when it is too short. */
export function parseTelephoneEvent(payload: Buffer): TelephoneEvent | null {
  if (payload.length < 4) return null;
  return { event: payload[0]!, end: (payload[1]! & 0x80) !== 0, volume: payload[1]! & 0x3f, duration: payload.readUInt16BE(2) };
}

/** Encodes a telephone-event payload. */
export function encodeTelephoneEvent(e: TelephoneEvent): Buffer {
  const out = Buffer.alloc(4);
  out[0] = e.event & 0xff;
  out[1] = (e.end ? 0x80 : 0) | (e.volume & 0x3f);
  out.writeUInt16BE(Math.min(0xffff, Math.max(0, Math.round(e.duration))), 2);
  return out;
}

/** The DTMF digit of an event code (0-9, *, #, A-D), or null for other events (flash, tones). */
export function eventToDigit(event: number): string | null {
  return event >= 0 && event < DIGITS.length ? DIGITS[event]! : null;
}

/** The event code of a DTMF digit (case-insensitive for A-D), or null. */
export function digitToEvent(digit: string): number | null {
  if (digit.length !== 1) return null;
  const i = DIGITS.indexOf(digit.toUpperCase());
  return i < 0 ? null : i;
}

/** True when every character of s is a DTMF digit. */
export function isDtmfString(s: string): boolean {
  return s.length > 0 && [...s].every((c) => digitToEvent(c) !== null);
}

/**
 * Turns received telephone-event packets into key presses. All packets of one press share the RTP timestamp (its start),
 * so a press is reported once, on its first packet, however many updates, retransmitted starts or redundant end packets
 * follow. Stragglers of an earlier press (a recently seen timestamp and event) are ignored. A start packet (marker bit,
 * no E bit) of an event that has already ended, or of an earlier one, is a new press: a replayed capture of the same key.
 */
export class DtmfReceiver {
  private current: { key: string; ended: boolean } | null = null;
  private readonly recent: string[] = [];

  /** Feeds one telephone-event packet; returns the digit when it starts a new press. */
  push(packet: { timestamp: number; marker: boolean; payload: Buffer }): string | null {
    const e = parseTelephoneEvent(packet.payload);
    if (!e) return null;
    const digit = eventToDigit(e.event);
    if (digit === null) return null;
    const key = `${packet.timestamp >>> 0}:${e.event}`;
    const cur = this.current;
    if (cur && cur.key === key) {
      const restart = cur.ended && packet.marker && !e.end;
      cur.ended ||= e.end;
      if (!restart) return null;
      cur.ended = e.end;
      return digit;
    }
    if (this.recent.includes(key) && !(packet.marker && !e.end)) return null;
    this.recent.push(key);
    if (this.recent.length > 16) this.recent.shift();
    this.current = { key, ended: e.end };
    return digit;
  }
}

export interface DtmfPacketPlan {
  /** Ticks (one packet interval each) after the event's start at which this packet is sent. */
  tick: number;
  marker: boolean;
  payload: Buffer;
}

/**
 * The packets of one key press at one packet per `packetMs`: a start packet with the marker bit, updates with growing
 * duration, and the final packet (E bit) sent three times on successive ticks, as RFC 4733 2.5.1.4 asks. All carry the
 * timestamp of the press's start; each is a new RTP packet (new sequence number).
 */
export function dtmfPackets(digit: string, options: { durationMs?: number; volume?: number; packetMs?: number; clockRate?: number } = {}): DtmfPacketPlan[] {
  const event = digitToEvent(digit);
  if (event === null) throw new RangeError(`not a DTMF digit: ${JSON.stringify(digit)}`);
  const packetMs = options.packetMs ?? 20;
  const rate = options.clockRate ?? 8000;
  const volume = options.volume ?? 10;
  const ticks = Math.max(2, Math.round((options.durationMs ?? 100) / packetMs));
  const unit = (rate * packetMs) / 1000;
  const plan: DtmfPacketPlan[] = [];
  for (let t = 0; t < ticks - 1; t++) {
    plan.push({ tick: t, marker: t === 0, payload: encodeTelephoneEvent({ event, end: false, volume, duration: (t + 1) * unit }) });
  }
  const final = encodeTelephoneEvent({ event, end: true, volume, duration: ticks * unit });
  for (let r = 0; r < 3; r++) plan.push({ tick: ticks - 1 + r, marker: false, payload: final });
  return plan;
}
