// Tools and secrets: the organization's tool library (api_call and client tools as JSON, checked before it is sent;
// a delete refused while agents use the tool names them) and the secrets vault, by name only (a value goes in through
// a password field and is never read back).
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api';
import { ErrorNote, useAction, when } from './ui';

interface Tool {
  toolId: string;
  type: string;
  definition: Record<string, unknown> & { name: string; description?: string; enabled?: boolean };
  updatedAt: string;
}
interface Secret {
  name: string;
  createdAt: string;
  updatedAt: string;
}

const TEMPLATES = {
  api_call: {
    type: 'api_call',
    name: 'lookup_order',
    description: 'Look up an order by its number and tell the caller its status.',
    url: 'https://api.example.com/orders/{{order_id}}',
    method: 'GET',
    timeout: 5000,
    llmParameters: [{ name: 'order_id', description: 'The order number the caller gives', type: 'text', required: true }],
    responseVariables: [{ variableName: 'order_status', jsonPath: '$.status' }],
    auth: { type: 'bearer', token: 'ORDERS_API_TOKEN' },
  },
  client_tool: {
    type: 'client_tool',
    name: 'show_calendar',
    description: 'Ask the app to show the caller the available appointment times.',
    timeoutMs: 1000,
    expectsResponse: true,
    fillerPhrases: ['One moment while I check.'],
  },
};

/** Parses and checks a definition the way the server will before sending it; throws with each problem named. */
export function checkDefinition(text: string): Record<string, unknown> {
  let d: unknown;
  try {
    d = JSON.parse(text);
  } catch (err) {
    throw new Error(`Definition: not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!d || typeof d !== 'object' || Array.isArray(d)) throw new Error('Definition: must be a JSON object');
  const def = d as Record<string, unknown>;
  const problems: string[] = [];
  if (def.type !== 'api_call' && def.type !== 'client_tool') problems.push('type: must be api_call or client_tool');
  if (typeof def.name !== 'string' || !/^\S{1,64}$/.test(def.name)) problems.push('name: required, 1-64 characters without spaces');
  if (typeof def.description !== 'string' || !def.description.trim()) problems.push('description: required');
  if (def.type === 'api_call') {
    if (typeof def.url !== 'string' || !/^https?:\/\//i.test(def.url)) problems.push('url: required, an http or https URL');
    if (!['GET', 'POST', 'PUT', 'DELETE', 'PATCH'].includes(def.method as string)) problems.push('method: one of GET, POST, PUT, DELETE, PATCH');
  }
  if (problems.length) throw new Error(`Definition: ${problems.join('; ')}`);
  return def;
}

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The JSON merge patch (RFC 7396, what PATCH /tool takes) that turns `from` into `to`: removed fields become null. */
export function mergePatchOf(from: Record<string, unknown>, to: Record<string, unknown>): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  for (const k of Object.keys(from)) if (!(k in to)) p[k] = null;
  for (const [k, v] of Object.entries(to)) {
    const old = from[k];
    if (isObj(old) && isObj(v)) {
      const sub = mergePatchOf(old, v);
      if (Object.keys(sub).length) p[k] = sub;
    } else if (JSON.stringify(old) !== JSON.stringify(v)) p[k] = v;
  }
  return p;
}

function ToolEditor({ tool, onDone }: { tool: Tool | null; onDone: () => void }) {
  const [text, setText] = useState(JSON.stringify(tool ? tool.definition : TEMPLATES.api_call, null, 2));
  const act = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const def = checkDefinition(text);
      if (tool) {
        // A changed type replaces the definition (the server does the same); otherwise only what changed is sent.
        const definition = def.type !== tool.definition.type ? def : mergePatchOf(tool.definition, def);
        if (Object.keys(definition).length) await api('PATCH', `/tool/${encodeURIComponent(tool.toolId)}`, { definition });
      } else {
        await api('POST', '/tool', { definition: def });
      }
      onDone();
    });
  };
  return (
    <form class="card" aria-label={tool ? `Edit tool ${tool.definition.name}` : 'New tool'} onSubmit={save}>
      <h2>{tool ? `Edit ${tool.definition.name}` : 'New tool'}</h2>
      {!tool && (
        <div class="row">
          <span class="sub">Start from:</span>
          <button type="button" class="link" onClick={() => setText(JSON.stringify(TEMPLATES.api_call, null, 2))}>an API call</button>
          <button type="button" class="link" onClick={() => setText(JSON.stringify(TEMPLATES.client_tool, null, 2))}>a client tool</button>
        </div>
      )}
      <label>
        Definition (JSON)
        <textarea name="definition" class="code" rows={16} spellcheck={false} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
      </label>
      <p class="hint">Credentials in <code>auth</code> are names of secrets below, never values.</p>
      <ErrorNote error={act.error} />
      <div class="row">
        <button type="submit" disabled={act.busy}>{tool ? 'Save tool' : 'Create tool'}</button>
        <button type="button" class="link" onClick={onDone}>Cancel</button>
      </div>
    </form>
  );
}

/** The agents a 409 `tool_in_use` names, as links. */
function UsedBy({ error }: { error: unknown }) {
  if (!(error instanceof ApiError) || error.status !== 409) return null;
  const agents = ((error.body as { data?: { agents?: { _id: string; name: string }[] } } | null)?.data?.agents) ?? [];
  if (!agents.length) return null;
  return (
    <ul class="plain" aria-label="Agents using the tool">
      {agents.map((a) => <li key={a._id}><a href={`#/agents/${encodeURIComponent(a._id)}`}>{a.name}</a></li>)}
    </ul>
  );
}

function ToolLibrary() {
  const [tools, setTools] = useState<Tool[] | null>(null);
  const [editing, setEditing] = useState<Tool | 'new' | null>(null);
  const load = useAction();
  const act = useAction();
  const refresh = () => load.run(async () => setTools((await api<{ tools: Tool[] }>('GET', '/tool')).tools));
  useEffect(() => {
    void refresh();
  }, []);
  const remove = (t: Tool) =>
    act.run(async () => {
      if (!confirm(`Delete the tool ${t.definition.name}?`)) return;
      await api('DELETE', `/tool/${encodeURIComponent(t.toolId)}`);
      await refresh();
    });
  const done = () => {
    setEditing(null);
    void refresh();
  };
  return (
    <section aria-label="Tool library">
      <div class="bar">
        <h2>Tool library</h2>
        <button type="button" onClick={() => setEditing('new')} disabled={editing !== null}>New tool</button>
      </div>
      {editing && <ToolEditor key={editing === 'new' ? 'new' : editing.toolId} tool={editing === 'new' ? null : editing} onDone={done} />}
      <ErrorNote error={load.error} />
      <ErrorNote error={act.error}><UsedBy error={act.error} /></ErrorNote>
      {tools === null ? <p>Loading…</p> : tools.length === 0 ? <p class="empty">No tools yet.</p> : (
        <table class="list tools">
          <thead>
            <tr><th>Name</th><th>Type</th><th class="wide">Description</th><th class="wide">Updated</th><th /></tr>
          </thead>
          <tbody>
            {tools.map((t) => (
              <tr key={t.toolId}>
                <td>
                  <b>{t.definition.name}</b>
                  {t.definition.enabled === false && <span class="tag warn">disabled</span>}
                  <div class="sub">{t.toolId}</div>
                </td>
                <td>{t.type.replace('_', ' ')}</td>
                <td class="wide">{t.definition.description}</td>
                <td class="wide">{when(t.updatedAt)}</td>
                <td class="actions">
                  <button type="button" class="link" disabled={editing !== null} onClick={() => setEditing(t)}>Edit</button>
                  <button type="button" class="link" disabled={act.busy} onClick={() => void remove(t)}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Secrets() {
  const [secrets, setSecrets] = useState<Secret[] | null>(null);
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [replacing, setReplacing] = useState<string | null>(null);
  const load = useAction();
  const act = useAction();
  const refresh = () => load.run(async () => setSecrets((await api<{ secrets: Secret[] }>('GET', '/secret')).secrets));
  useEffect(() => {
    void refresh();
  }, []);
  const save = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const n = replacing ?? name.trim();
      if (!/^[A-Za-z0-9_.-]{1,100}$/.test(n)) throw new Error('Name: 1-100 letters, digits, _ . or -');
      if (!value) throw new Error('Value: required');
      if (replacing) await api('PUT', `/secret/${encodeURIComponent(n)}`, { value });
      else await api('POST', '/secret', { name: n, value });
      // The value leaves the page's state as soon as the server has it.
      setValue('');
      setName('');
      setReplacing(null);
      await refresh();
    });
  };
  const remove = (s: Secret) =>
    act.run(async () => {
      if (!confirm(`Delete the secret ${s.name}? Tools and agents naming it will fail to use it.`)) return;
      await api('DELETE', `/secret/${encodeURIComponent(s.name)}`);
      await refresh();
    });
  return (
    <section aria-label="Secrets">
      <div class="bar"><h2>Secrets</h2></div>
      <p class="hint">Values are stored encrypted and used only when a tool calls out; nobody can read them back, here or through the API.</p>
      <form class="card" aria-label={replacing ? `Replace secret ${replacing}` : 'New secret'} onSubmit={save}>
        <div class="row">
          <label>
            Name
            <input name="secretName" autocomplete="off" value={replacing ?? name} disabled={replacing !== null} placeholder="ORDERS_API_TOKEN" onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Value
            <input name="secretValue" type="password" autocomplete="new-password" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
          </label>
        </div>
        <div class="row">
          <button type="submit" disabled={act.busy}>{replacing ? 'Replace value' : 'Add secret'}</button>
          {replacing && <button type="button" class="link" onClick={() => (setReplacing(null), setValue(''))}>Cancel</button>}
        </div>
      </form>
      <ErrorNote error={load.error || act.error} />
      {secrets === null ? <p>Loading…</p> : secrets.length === 0 ? <p class="empty">No secrets yet.</p> : (
        <table class="list secrets">
          <thead><tr><th>Name</th><th class="wide">Created</th><th>Updated</th><th /></tr></thead>
          <tbody>
            {secrets.map((s) => (
              <tr key={s.name}>
                <td><code>{s.name}</code></td>
                <td class="wide">{when(s.createdAt)}</td>
                <td>{when(s.updatedAt)}</td>
                <td class="actions">
                  <button type="button" class="link" onClick={() => (setReplacing(s.name), setValue(''))}>Replace value</button>
                  <button type="button" class="link" disabled={act.busy} onClick={() => void remove(s)}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function ToolsPage() {
  return (
    <section class="tools-page">
      <div class="bar"><h1>Tools and secrets</h1></div>
      <ToolLibrary />
      <Secrets />
    </section>
  );
}
