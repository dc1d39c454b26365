// Webhooks: list, create (endpoint, description, headers, events per agent), edit, enable/disable, delete, the
// agents' subscriptions, and each webhook's delivery log. The API has no redelivery and no secret rotation (one
// attempt per event, docs/api.md, "Webhooks"); the signing secret is shown only on request.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api';
import { ErrorNote, useAction, when } from './ui';

const EVENT_TYPES = ['pre-conversation', 'post-conversation', 'analytics-completed'] as const;
const DELIVERY_STATUSES = ['', 'PENDING', 'SENDING', 'DELIVERED', 'FAILED'];

interface Subscription {
  _id: string;
  agentId: { _id: string; name: string } | null;
  eventType: string;
}
interface Webhook {
  _id: string;
  url: string;
  description: string;
  status: 'enabled' | 'disabled';
  headers: Record<string, string>;
  subscriptions: Subscription[];
  decryptedSecretKey: string;
  createdAt: string;
}
interface Delivery {
  id: string;
  event: string;
  callId: string;
  status: string;
  responseCode: number | null;
  latencyMs: number | null;
  error: string | null;
  createdAt: string;
  sentAt: string | null;
}
interface AgentRef {
  _id: string;
  name: string;
}

/** Headers typed as JSON; throws naming the field when they are not an object of strings. */
function headersOf(text: string): Record<string, string> {
  if (!text.trim()) return {};
  let h: unknown;
  try {
    h = JSON.parse(text);
  } catch {
    throw new Error('Headers: not valid JSON (an object such as {"X-Api-Key": "..."})');
  }
  if (!h || typeof h !== 'object' || Array.isArray(h) || Object.values(h).some((v) => typeof v !== 'string')) throw new Error('Headers: must be an object of header names to string values');
  return h as Record<string, string>;
}

function checkEndpoint(url: string): string {
  try {
    const u = new URL(url.trim());
    if (u.protocol === 'http:' || u.protocol === 'https:') return u.href;
  } catch {
    /* below */
  }
  throw new Error('Endpoint: an http or https URL');
}

/** Agent rows with an event checkbox each, for creating a webhook or setting one agent's subscriptions. */
function EventPicker({ agents, value, onChange }: { agents: AgentRef[]; value: Record<string, string[]>; onChange: (v: Record<string, string[]>) => void }) {
  const [agent, setAgent] = useState('');
  const toggle = (id: string, type: string, on: boolean) => {
    const types = (value[id] ?? []).filter((t) => t !== type);
    onChange({ ...value, [id]: on ? [...types, type] : types });
  };
  const chosen = Object.keys(value);
  return (
    <fieldset>
      <legend>Events</legend>
      {chosen.map((id) => (
        <div class="row" key={id} role="group" aria-label={`Events of ${agents.find((a) => a._id === id)?.name ?? id}`}>
          <b>{agents.find((a) => a._id === id)?.name ?? id}</b>
          {EVENT_TYPES.map((t) => (
            <label class="check" key={t}>
              <input type="checkbox" checked={(value[id] ?? []).includes(t)} onChange={(e) => toggle(id, t, (e.target as HTMLInputElement).checked)} /> {t}
            </label>
          ))}
          <button type="button" class="link" onClick={() => onChange(Object.fromEntries(Object.entries(value).filter(([k]) => k !== id)))}>Remove</button>
        </div>
      ))}
      <div class="row">
        <select aria-label="Agent" value={agent} onChange={(e) => setAgent((e.target as HTMLSelectElement).value)}>
          <option value="">Choose an agent</option>
          {agents.filter((a) => !chosen.includes(a._id)).map((a) => <option key={a._id} value={a._id}>{a.name}</option>)}
        </select>
        <button type="button" disabled={!agent} onClick={() => (onChange({ ...value, [agent]: [...EVENT_TYPES] }), setAgent(''))}>Add agent</button>
      </div>
    </fieldset>
  );
}

function NewWebhook({ agents, onDone }: { agents: AgentRef[]; onDone: () => void }) {
  const [endpoint, setEndpoint] = useState('');
  const [description, setDescription] = useState('');
  const [headers, setHeaders] = useState('');
  const [events, setEvents] = useState<Record<string, string[]>>({});
  const act = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const body: Record<string, unknown> = { endpoint: checkEndpoint(endpoint), description, events: Object.entries(events).flatMap(([agentId, types]) => types.map((eventType) => ({ agentId, eventType }))) };
      const h = headersOf(headers);
      if (Object.keys(h).length) body.headers = h;
      await api('POST', '/webhook', body);
      onDone();
    });
  };
  return (
    <form class="card" aria-label="New webhook" onSubmit={create}>
      <h2>New webhook</h2>
      <label>
        Endpoint
        <input name="endpoint" type="url" required placeholder="https://example.com/parley-events" value={endpoint} onInput={(e) => setEndpoint((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Description
        <input name="description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Headers (JSON, optional)
        <textarea name="headers" class="code" rows={2} placeholder='{"X-Api-Key": "…"}' value={headers} onInput={(e) => setHeaders((e.target as HTMLTextAreaElement).value)} />
      </label>
      <EventPicker agents={agents} value={events} onChange={setEvents} />
      <ErrorNote error={act.error} />
      <div class="row">
        <button type="submit" disabled={act.busy}>Create webhook</button>
        <button type="button" class="link" onClick={onDone}>Cancel</button>
      </div>
    </form>
  );
}

function DeliveryLog({ webhookId }: { webhookId: string }) {
  const [status, setStatus] = useState('');
  const [rows, setRows] = useState<Delivery[] | null>(null);
  const load = useAction();
  const refresh = () =>
    load.run(async () => {
      const q = new URLSearchParams({ limit: '100' });
      if (status) q.set('status', status);
      setRows((await api<{ deliveries: Delivery[] }>('GET', `/webhook/${encodeURIComponent(webhookId)}/deliveries?${q}`)).deliveries);
    });
  useEffect(() => {
    void refresh();
  }, [webhookId, status]);
  return (
    <div class="deliveries">
      <div class="row">
        <h3>Delivery log</h3>
        <select aria-label="Delivery status" value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
          {DELIVERY_STATUSES.map((s) => <option key={s} value={s}>{s ? s.toLowerCase() : 'any status'}</option>)}
        </select>
        <button type="button" class="link" disabled={load.busy} onClick={() => void refresh()}>Refresh</button>
      </div>
      <ErrorNote error={load.error} />
      {rows === null ? <p>Loading…</p> : rows.length === 0 ? <p class="empty">No deliveries{status ? ` ${status.toLowerCase()}` : ' yet'}. Events are sent when calls of subscribed agents start and end.</p> : (
        <table class="list" aria-label="Deliveries">
          <thead><tr><th>Event</th><th>Status</th><th>Response</th><th class="wide">Call</th><th class="wide">Latency</th><th>Queued</th><th class="wide">Attempted</th></tr></thead>
          <tbody>
            {rows.map((d) => (
              <tr key={d.id}>
                <td>{d.event.split('.').slice(1).join('.')}</td>
                <td><span class={`tag${d.status === 'FAILED' ? ' warn' : ''}`}>{d.status.toLowerCase()}</span></td>
                <td>{d.responseCode ?? d.error ?? '—'}</td>
                <td class="wide"><a href={`#/calls/${encodeURIComponent(d.callId)}`}>{d.callId}</a></td>
                <td class="wide">{d.latencyMs === null ? '—' : `${d.latencyMs} ms`}</td>
                <td>{when(d.createdAt)}</td>
                <td class="wide">{d.sentAt ? when(d.sentAt) : 'not yet'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p class="hint">Each event is attempted once (no retries or redelivery); a failed one keeps its code or error here.</p>
    </div>
  );
}

function WebhookCard({ hook, agents, onChanged }: { hook: Webhook; agents: AgentRef[]; onChanged: () => Promise<void> }) {
  const [editing, setEditing] = useState(false);
  const [endpoint, setEndpoint] = useState(hook.url);
  const [description, setDescription] = useState(hook.description);
  const [headers, setHeaders] = useState(Object.keys(hook.headers).length ? JSON.stringify(hook.headers, null, 2) : '');
  const [showSecret, setShowSecret] = useState(false);
  const [showLog, setShowLog] = useState(false);
  const [subs, setSubs] = useState<Record<string, string[]> | null>(null);
  const act = useAction();
  // Subscriptions by agent, as the per-agent routes change them.
  const byAgent: Record<string, string[]> = {};
  for (const s of hook.subscriptions) if (s.agentId) byAgent[s.agentId._id] = [...(byAgent[s.agentId._id] ?? []), s.eventType];

  const openEdit = () => {
    setEndpoint(hook.url);
    setDescription(hook.description);
    setHeaders(Object.keys(hook.headers).length ? JSON.stringify(hook.headers, null, 2) : '');
    setEditing(!editing);
  };
  const save = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      await api('PATCH', `/webhook/${encodeURIComponent(hook._id)}`, { endpoint: checkEndpoint(endpoint), description, headers: headersOf(headers) });
      setEditing(false);
      await onChanged();
    });
  };
  const saveSubs = () =>
    act.run(async () => {
      if (!subs) return;
      for (const [agentId, types] of Object.entries(subs)) {
        if (JSON.stringify([...types].sort()) === JSON.stringify([...(byAgent[agentId] ?? [])].sort())) continue;
        if (types.length) await api('POST', `/agent/${encodeURIComponent(agentId)}/webhook-subscriptions`, { webhookId: hook._id, eventTypes: types });
        else await api('DELETE', `/agent/${encodeURIComponent(agentId)}/webhook-subscriptions`);
      }
      for (const agentId of Object.keys(byAgent)) if (!(agentId in subs)) await api('DELETE', `/agent/${encodeURIComponent(agentId)}/webhook-subscriptions`);
      setSubs(null);
      await onChanged();
    });
  const toggle = () =>
    act.run(async () => {
      await api('POST', `/webhook/${encodeURIComponent(hook._id)}/${hook.status === 'enabled' ? 'disable' : 'enable'}`);
      await onChanged();
    });
  const remove = () =>
    act.run(async () => {
      if (!confirm(`Delete the webhook ${hook.url} and its delivery log?`)) return;
      await api('DELETE', `/webhook/${encodeURIComponent(hook._id)}`);
      await onChanged();
    });

  return (
    <article class="card webhook" aria-label={`Webhook ${hook.url}`}>
      <div class="row">
        <b class="url">{hook.url}</b>
        <span class={`tag${hook.status === 'disabled' ? ' warn' : ''}`}>{hook.status}</span>
        {hook.description && <span class="sub">{hook.description}</span>}
      </div>
      <div class="sub">
        {hook.subscriptions.length === 0 ? 'No agent subscribed.' : Object.entries(byAgent).map(([id, types]) => (
          <span key={id} class="sub-agent"><a href={`#/agents/${encodeURIComponent(id)}`}>{agents.find((a) => a._id === id)?.name ?? id}</a>: {types.join(', ')} </span>
        ))}
      </div>
      <div class="row">
        <button type="button" class="link" onClick={openEdit}>{editing ? 'Close edit' : 'Edit'}</button>
        <button type="button" class="link" onClick={() => setSubs(subs ? null : { ...byAgent })}>{subs ? 'Close subscriptions' : 'Subscriptions'}</button>
        <button type="button" class="link" disabled={act.busy} onClick={() => void toggle()}>{hook.status === 'enabled' ? 'Disable' : 'Enable'}</button>
        <button type="button" class="link" onClick={() => setShowLog(!showLog)}>{showLog ? 'Hide deliveries' : 'Deliveries'}</button>
        <button type="button" class="link" onClick={() => setShowSecret(!showSecret)}>{showSecret ? 'Hide signing secret' : 'Show signing secret'}</button>
        <button type="button" class="link" disabled={act.busy} onClick={() => void remove()}>Delete</button>
      </div>
      {showSecret && <p class="secret">Signing secret (HMAC-SHA256 of the body, sent as <code>X-Signature</code>): <code>{hook.decryptedSecretKey}</code></p>}
      <ErrorNote error={act.error} />
      {editing && (
        <form aria-label="Edit webhook" onSubmit={save}>
          <label>
            Endpoint
            <input name="endpoint" type="url" value={endpoint} onInput={(e) => setEndpoint((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Description
            <input name="description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Headers (JSON; empty clears them)
            <textarea name="headers" class="code" rows={3} value={headers} onInput={(e) => setHeaders((e.target as HTMLTextAreaElement).value)} />
          </label>
          <button type="submit" disabled={act.busy}>Save webhook</button>
        </form>
      )}
      {subs && (
        <div>
          <EventPicker agents={agents} value={subs} onChange={setSubs} />
          <p class="hint">An agent's subscriptions live on one webhook: saving an agent here replaces its subscriptions on any other webhook.</p>
          <button type="button" disabled={act.busy} onClick={() => void saveSubs()}>Save subscriptions</button>
        </div>
      )}
      {showLog && <DeliveryLog webhookId={hook._id} />}
    </article>
  );
}

export function WebhooksPage() {
  const [hooks, setHooks] = useState<Webhook[] | null>(null);
  const [agents, setAgents] = useState<AgentRef[]>([]);
  const [creating, setCreating] = useState(false);
  const load = useAction();
  const refresh = () => load.run(async () => setHooks(await api<Webhook[]>('GET', '/webhook')));
  useEffect(() => {
    void refresh();
    api<{ agents: AgentRef[] }>('GET', '/agent?offset=100').then((r) => setAgents(r.agents), load.setError);
  }, []);
  return (
    <section class="webhooks-page">
      <div class="bar">
        <h1>Webhooks</h1>
        <button type="button" onClick={() => setCreating(!creating)}>New webhook</button>
      </div>
      {creating && <NewWebhook agents={agents} onDone={() => (setCreating(false), void refresh())} />}
      <ErrorNote error={load.error} />
      {hooks === null ? <p>Loading…</p> : hooks.length === 0 ? <p class="empty">No webhooks yet.</p> : hooks.map((h) => <WebhookCard key={h._id} hook={h} agents={agents} onChanged={refresh} />)}
    </section>
  );
}
