// Prometheus metrics of the phone leg: calls up, how long an INVITE waits for its answer, the media quality a caller
// hears (silence the agent's audio did not arrive in time for, send-clock stalls, packets lost on the way in), and
// digest password guessing (wrong answers, cooling-off periods started, requests refused while cooling).
import client from 'prom-client';
import { SEND_DEVIATION_BOUNDS_MS, type RtpSessionStats } from './media/session.js';
import type { GuardScope } from './digest-guard.js';

export type CallDirection = 'inbound' | 'outbound';

export class TelephonyMetrics {
  private readonly calls: client.Gauge<'direction'>;
  private readonly answer: client.Histogram<'direction'>;
  private readonly underrun: client.Counter<'direction'>;
  private readonly skipped: client.Counter<'direction'>;
  private readonly lost: client.Counter<'direction'>;
  private readonly sendDeviation: CountedHistogram;
  private readonly authFailures: client.Counter;
  private readonly authLockouts: client.Counter<'scope'>;
  private readonly authRefused: client.Counter<'scope'>;

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
    this.sendDeviation = new CountedHistogram(
      'parley_rtp_send_interval_deviation_seconds',
      'How far each interval between two RTP packets we sent was from 20 ms (timed at the send; added when the call ends)',
      SEND_DEVIATION_BOUNDS_MS.map((ms) => ms / 1000),
      registry,
    );
    this.authFailures = new client.Counter({ name: 'parley_sip_auth_failures_total', help: 'Wrong SIP digest answers (a wrong password or username)', registers });
    this.authLockouts = new client.Counter({
      name: 'parley_sip_auth_lockouts_total',
      help: 'SIP digest cooling-off periods started here (scope source: one address on one trunk; trunk: every address without a recent success)',
      labelNames: ['scope'],
      registers,
    });
    this.authRefused = new client.Counter({ name: 'parley_sip_auth_refused_total', help: 'SIP requests refused 403 without a challenge while cooling off', labelNames: ['scope'], registers });
    for (const scope of ['source', 'trunk'] as const) {
      this.authLockouts.inc({ scope }, 0);
      this.authRefused.inc({ scope }, 0);
    }
  }

  /** A wrong digest answer, and the cooling-off periods it started. */
  digestFailed(lockouts: readonly { scope: GuardScope }[]): void {
    this.authFailures.inc();
    for (const l of lockouts) this.authLockouts.inc({ scope: l.scope });
  }

  /** A request refused while its source or trunk cools off. */
  digestRefused(scope: GuardScope): void {
    this.authRefused.inc({ scope });
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
    this.sendDeviation.add(direction, stats.sendDeviation.counts, stats.sendDeviation.sumMs / 1000);
  }
}

/**
 * A Prometheus histogram fed with bucket counts made elsewhere: an RTP session (on the media thread) counts its packet
 * intervals, and a call's counts are added in one step when it ends. prom-client has no bulk observe, and observing
 * each interval (50 a second) blocked the main thread about 60 ms at the end of an hour-long call.
 */
class CountedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** Per direction: counts per bucket (the last past every bound, as the sessions count them) and their sum. */
  private readonly series = new Map<CallDirection, { counts: number[]; sum: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    registry: client.Registry,
  ) {
    registry.registerMetric(this as unknown as client.Metric);
  }

  add(direction: CallDirection, counts: readonly number[], sum: number): void {
    let s = this.series.get(direction);
    if (!s) this.series.set(direction, (s = { counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0 }));
    counts.forEach((c, i) => (s.counts[i]! += c));
    s.sum += sum;
  }

  /** The exposition prom-client's registry formats: cumulative `_bucket` series by `le`, then `_sum` and `_count`. */
  get(): { name: string; help: string; type: string; values: client.MetricValueWithName<string>[]; aggregator: string } {
    const values: client.MetricValueWithName<string>[] = [];
    for (const [direction, s] of this.series) {
      let total = 0;
      this.bounds.forEach((le, i) => {
        total += s.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, direction }, value: total });
      });
      total += s.counts[this.bounds.length]!;
      values.push(
        { metricName: `${this.name}_bucket`, labels: { le: '+Inf', direction }, value: total },
        { metricName: `${this.name}_sum`, labels: { direction }, value: s.sum },
        { metricName: `${this.name}_count`, labels: { direction }, value: total },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.series.clear();
  }
}
