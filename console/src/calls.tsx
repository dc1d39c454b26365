// Calls: the list with filters, and one call with its transcript, variables, analytics, per-turn latency, webhook
// deliveries and the recording (played from its short-lived signed URL).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from './api';
import { LatencyChart } from './talk';
import { ErrorNote, useAction, when } from './ui';

interface CallSummary {
  callId: string;
  agentId?: string | null;
  status: string;
  type: string;
  duration: number;
  createdAt: string;
  endReason?: string | null;
}
const STATUSES = ['', 'completed', 'in_progress', 'in_queue', 'failed', 'no_answer', 'cancelled'];
/** A call still under way: its record is read again until it ends. */
const LIVE = new Set(['pending', 'in_progress', 'in_queue', 'processing', 'active']);
const TYPES = ['', 'webcall', 'telephony_inbound', 'telephony_outbound'];

export function CallList() {
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const [search, setSearch] = useState('');
  const [page, setPage] = useState(1);
  const [data, setData] = useState<{ logs: CallSummary[]; pagination: { total: number; totalPages: number } } | null>(null);
  const [names, setNames] = useState<Record<string, string>>({});
  const load = useAction();
  useEffect(() => {
    api<{ agents: { _id: string; name: string }[] }>('GET', '/agent?offset=100').then((r) => setNames(Object.fromEntries(r.agents.map((a) => [a._id, a.name]))), load.setError);
  }, []);
  const loaded = useRef(false);
  useEffect(() => {
    const delay = loaded.current ? 200 : 0;
    loaded.current = true;
    const t = setTimeout(() => {
      void load.run(async () => {
        const q = new URLSearchParams({ page: String(page), limit: '25' });
        if (status) q.set('statusFilter', status);
        if (type) q.set('callTypes', type);
        if (search.trim()) q.set('search', search.trim());
        setData(await api('GET', `/conversation?${q}`));
      });
    }, delay);
    return () => clearTimeout(t);
  }, [status, type, search, page]);
  return (
    <section>
      <div class="bar">
        <h1>Calls</h1>
        <input type="search" aria-label="Search calls" placeholder="Search calls" value={search} onInput={(e) => (setSearch((e.target as HTMLInputElement).value), setPage(1))} />
        <select aria-label="Status" value={status} onChange={(e) => (setStatus((e.target as HTMLSelectElement).value), setPage(1))}>
          {STATUSES.map((s) => <option key={s} value={s}>{s || 'any status'}</option>)}
        </select>
        <select aria-label="Type" value={type} onChange={(e) => (setType((e.target as HTMLSelectElement).value), setPage(1))}>
          {TYPES.map((s) => <option key={s} value={s}>{s || 'any type'}</option>)}
        </select>
      </div>
      <ErrorNote error={load.error} />
      {!data ? <p>Loading…</p> : data.logs.length === 0 ? <p class="empty">No calls.</p> : (
        <>
          <table class="list calls">
            <thead>
              <tr>
                <th>Call</th>
                <th>Agent</th>
                <th class="wide">Type</th>
                <th>Status</th>
                <th class="wide">Duration</th>
                <th class="wide">Started</th>
              </tr>
            </thead>
            <tbody>
              {data.logs.map((c) => (
                <tr key={c.callId}>
                  <td><a href={`#/calls/${encodeURIComponent(c.callId)}`}>{c.callId}</a></td>
                  <td>{c.agentId ? <a href={`#/agents/${encodeURIComponent(c.agentId)}`}>{names[c.agentId] ?? c.agentId}</a> : ''}</td>
                  <td class="wide">{c.type}</td>
                  <td>{c.status}</td>
                  <td class="wide">{c.duration} s</td>
                  <td class="wide">{when(c.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <div class="row">
            <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>Previous</button>
            <span class="sub">page {page} of {Math.max(1, data.pagination.totalPages)} ({data.pagination.total} calls)</span>
            <button type="button" disabled={page >= data.pagination.totalPages} onClick={() => setPage(page + 1)}>Next</button>
          </div>
        </>
      )}
    </section>
  );
}

interface CallRecord extends CallSummary {
  agent?: { _id: string; name: string } | null;
  transcript: { role: string; content: string; timestamp: string }[];
  variables: Record<string, unknown>;
  postCallAnalytics: Record<string, unknown> | null;
  turnMetrics: { e2eMs?: number | null }[];
  recordingUrl: string | null;
  mode?: string;
  startedAt?: string;
  endedAt?: string | null;
}
interface Delivery {
  id: string;
  event: string;
  status: string;
  responseCode: number | null;
  latencyMs: number | null;
  error: string | null;
  createdAt: string;
}

export function CallPage({ callId }: { callId: string }) {
  const [call, setCall] = useState<CallRecord | null>(null);
  const [recording, setRecording] = useState<string | null>(null);
  const [deliveries, setDeliveries] = useState<Delivery[] | null>(null);
  const load = useAction();
  useEffect(() => {
    let gone = false;
    void load.run(async () => {
      let c = await api<CallRecord>('GET', `/conversation/${encodeURIComponent(callId)}`);
      setCall(c);
      while (LIVE.has(c.status) && !gone) {
        await new Promise((r) => setTimeout(r, 1500));
        c = await api<CallRecord>('GET', `/conversation/${encodeURIComponent(callId)}`);
        setCall(c);
      }
      try {
        setRecording((await api<{ url: string }>('GET', `/recordings/${encodeURIComponent(callId)}`)).url);
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
      }
      const hooks = await api<{ _id: string }[]>('GET', '/webhook');
      const all = await Promise.all(hooks.map((h) => api<{ deliveries: Delivery[] }>('GET', `/webhook/${encodeURIComponent(h._id)}/deliveries?callId=${encodeURIComponent(callId)}`)));
      setDeliveries(all.flatMap((d) => d.deliveries));
    });
    return () => {
      gone = true;
    };
  }, [callId]);
  if (!call) return <section><ErrorNote error={load.error} />{!load.error && <p>Loading…</p>}</section>;
  const e2e = call.turnMetrics.map((t) => t.e2eMs).filter((x): x is number => typeof x === 'number').map(Math.round);
  return (
    <section class="call">
      <div class="bar">
        <h1>{call.callId}</h1>
        <span class="tag">{call.type}</span>
        <span class="tag">{call.status}</span>
        {call.agent && <a href={`#/agents/${encodeURIComponent(call.agent._id)}`}>{call.agent.name}</a>}
      </div>
      <p class="sub">
        {when(call.startedAt)} · {call.duration} s · ended: {call.endReason ?? '—'}
      </p>
      <ErrorNote error={load.error} />
      <div class="card">
        <h2>Recording</h2>
        {recording ? <audio controls preload="metadata" src={recording} aria-label="Recording" /> : <p class="empty">No recording for this call.</p>}
      </div>
      <div class="card">
        <h2>Transcript</h2>
        <ol class="transcript" aria-label="Call transcript">
          {call.transcript.map((t, i) => (
            <li key={i} class={t.role === 'user' ? 'user' : 'assistant'}>
              <b>{t.role === 'user' ? 'Caller' : 'Agent'}:</b> {t.content}
            </li>
          ))}
        </ol>
      </div>
      {e2e.length > 0 && (
        <div class="card">
          <LatencyChart values={e2e} label="End of the caller's speech to the agent's first audio, per turn (ms, the engine's measure)" />
        </div>
      )}
      <div class="card">
        <h2>Variables</h2>
        <table class="kv">
          <tbody>
            {Object.entries(call.variables ?? {}).map(([k, v]) => (
              <tr key={k}><th>{k}</th><td>{String(v)}</td></tr>
            ))}
          </tbody>
        </table>
      </div>
      <div class="card">
        <h2>Analytics</h2>
        <pre>{JSON.stringify(call.postCallAnalytics, null, 2)}</pre>
      </div>
      <div class="card">
        <h2>Webhook deliveries</h2>
        {!deliveries ? <p>Loading…</p> : deliveries.length === 0 ? <p class="empty">None for this call.</p> : (
          <table class="list">
            <thead><tr><th>Event</th><th>Status</th><th>Response</th><th class="wide">Latency</th><th class="wide">When</th></tr></thead>
            <tbody>
              {deliveries.map((d) => (
                <tr key={d.id}>
                  <td>{d.event.split('.').slice(1).join('.')}</td>
                  <td>{d.status}</td>
                  <td>{d.responseCode ?? d.error ?? ''}</td>
                  <td class="wide">{d.latencyMs ?? ''} ms</td>
                  <td class="wide">{when(d.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </section>
  );
}
