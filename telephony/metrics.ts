// Prometheus metrics of the phone leg: calls up, how long an INVITE waits for its answer, and the media quality a
// caller hears (silence the agent's audio did not arrive in time for, send-clock stalls, packets lost on the way in).
import client from 'prom-client';
import { SEND_DEVIATION_BOUNDS_MS, type RtpSessionStats } from './media/session.js';

export type CallDirection = 'inbound' | 'outbound';

export class TelephonyMetrics {
  private readonly calls: client.Gauge<'direction'>;
  private readonly answer: client.Histogram<'direction'>;
  private readonly underrun: client.Counter<'direction'>;
  private readonly skipped: client.Counter<'direction'>;
  private readonly lost: client.Counter<'direction'>;
  private readonly sendDeviation: client.Histogram<'direction'>;

  constructor(registry: client.Registry) {
    const registers = [registry];
    this.calls = new client.Gauge({ name: 'parley_phone_calls', help: 'Phone calls up now', labelNames: ['direction'], registers });
    this.answer = new client.Histogram({
      name: 'parley_sip_answer_seconds',
      help: 'INVITE received to 200 OK sent (inbound calls answered)',
      labelNames: ['direction'],
      buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.underrun = new client.Counter({
      name: 'parley_rtp_output_underrun_seconds_total',
      help: "Silence sent mid-turn because the agent's audio was late (output behind real time)",
      labelNames: ['direction'],
      registers,
    });
    this.skipped = new client.Counter({ name: 'parley_rtp_clock_skipped_ticks_total', help: 'RTP send-clock ticks skipped after event-loop stalls', labelNames: ['direction'], registers });
    this.lost = new client.Counter({ name: 'parley_rtp_input_lost_frames_total', help: 'Caller frames not received by their playout time (concealed)', labelNames: ['direction'], registers });
    this.sendDeviation = new client.Histogram({
      name: 'parley_rtp_send_interval_deviation_seconds',
      help: 'How far each interval between two RTP packets we sent was from 20 ms (timed at the send; added when the call ends; the sum counts each interval at its bucket middle)',
      labelNames: ['direction'],
      buckets: SEND_DEVIATION_BOUNDS_MS.map((ms) => ms / 1000),
      registers,
    });
  }

  answered(direction: CallDirection, seconds: number): void {
    this.answer.observe({ direction }, seconds);
    this.calls.inc({ direction });
  }

  /** A call is over: its media counters are added. */
  ended(direction: CallDirection, stats: RtpSessionStats): void {
    this.calls.dec({ direction });
    this.underrun.inc({ direction }, stats.underrunFrames * 0.02);
    this.skipped.inc({ direction }, stats.skippedTicks);
    this.lost.inc({ direction }, stats.lost);
    // The session counted its intervals per bucket (it may run on the media worker): each is observed at its bucket's
    // middle, which lands it in the same bucket.
    stats.sendDeviation.forEach((count, i) => {
      const low = i === 0 ? 0 : SEND_DEVIATION_BOUNDS_MS[i - 1]!;
      const high = SEND_DEVIATION_BOUNDS_MS[i] ?? low * 2;
      for (let k = 0; k < count; k++) this.sendDeviation.observe({ direction }, (low + high) / 2000);
    });
  }
}
