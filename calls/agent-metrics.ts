// Prometheus histograms of each agent turn's latency parts, and session counters, on the server's metrics registry.
import client from 'prom-client';
import type { TurnMetrics } from '../engine/agent/session.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 1.5, 2, 3, 5, 10];

export class AgentMetrics {
  private readonly parts: client.Histogram<'part' | 'mode'>;
  private readonly sessions: client.Gauge<'mode'>;
  private readonly ended: client.Counter<'mode' | 'reason'>;

  constructor(registry: client.Registry) {
    this.parts = new client.Histogram({
      name: 'parley_agent_turn_seconds',
      help: 'Agent turn latency by part: eou_delay, recognition, brain_first_token, synthesis_first_byte, end_to_end, engine_overhead',
      labelNames: ['part', 'mode'],
      buckets: BUCKETS,
      registers: [registry],
    });
    this.sessions = new client.Gauge({ name: 'parley_agent_sessions', help: 'Agent sessions open now', labelNames: ['mode'], registers: [registry] });
    this.ended = new client.Counter({ name: 'parley_agent_sessions_ended_total', help: 'Agent sessions ended, by reason', labelNames: ['mode', 'reason'], registers: [registry] });
  }

  opened(mode: string): void {
    this.sessions.inc({ mode });
  }

  closed(mode: string, reason: string): void {
    this.sessions.dec({ mode });
    this.ended.inc({ mode, reason });
  }

  turn(mode: string, m: TurnMetrics): void {
    const put = (part: string, ms: number | null) => {
      if (ms !== null && Number.isFinite(ms)) this.parts.observe({ part, mode }, ms / 1000);
    };
    put('eou_delay', m.eouDelayMs);
    put('recognition', m.recognitionMs);
    put('brain_first_token', m.brainFirstTokenMs);
    put('synthesis_first_byte', m.ttsFirstByteMs);
    put('end_to_end', m.e2eMs);
    put('engine_overhead', m.engineOverheadMs);
  }
}
