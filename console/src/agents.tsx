// Agents: list with search, create (blank or from a template), archive.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api';
import { ErrorNote, useAction, when } from './ui';

interface AgentSummary {
  _id: string;
  name: string;
  description?: string | null;
  workflowType: string;
  updatedAt: string;
  archived: boolean;
  totalCalls?: number;
}
interface Template {
  id: string;
  name: string;
  description?: string;
  workflowType: string;
}

export function AgentList() {
  const [search, setSearch] = useState('');
  const [archived, setArchived] = useState(false);
  const [agents, setAgents] = useState<AgentSummary[] | null>(null);
  const [templates, setTemplates] = useState<Template[]>([]);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState('');
  const [template, setTemplate] = useState('');
  const load = useAction();
  const act = useAction();

  const refresh = () =>
    load.run(async () => {
      const q = new URLSearchParams({ offset: '50' });
      if (search.trim()) q.set('search', search.trim());
      if (archived) q.set('archived', 'true');
      setAgents((await api<{ agents: AgentSummary[] }>('GET', `/agent?${q}`)).agents);
    });
  // Typing in the search box waits for a pause (200 ms); the first load does not.
  const loaded = useRef(false);
  useEffect(() => {
    const t = setTimeout(() => void refresh(), loaded.current ? 200 : 0);
    loaded.current = true;
    return () => clearTimeout(t);
  }, [search, archived]);
  useEffect(() => {
    api<Template[]>('GET', '/agent/template').then(setTemplates, load.setError);
  }, []);

  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const id = template
        ? await api<string>('POST', '/agent/from-template', { templateId: template, ...(name.trim() ? { name: name.trim() } : {}) })
        : await api<string>('POST', '/agent', { name: name.trim() || 'New agent' });
      location.hash = `#/agents/${encodeURIComponent(typeof id === 'string' ? id : (id as { _id: string })._id)}`;
    });
  };
  const archive = (a: AgentSummary) =>
    act.run(async () => {
      await api('DELETE', `/agent/${encodeURIComponent(a._id)}/archive?on=${a.archived ? 'false' : 'true'}`);
      await refresh();
    });

  return (
    <section>
      <div class="bar">
        <h1>Agents</h1>
        <input type="search" placeholder="Search agents" aria-label="Search agents" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        <label class="check">
          <input type="checkbox" checked={archived} onChange={(e) => setArchived((e.target as HTMLInputElement).checked)} /> archived
        </label>
        <button type="button" onClick={() => setCreating(!creating)}>New agent</button>
      </div>
      {creating && (
        <form class="card" onSubmit={create} aria-label="New agent">
          <label>
            Name
            <input name="name" value={name} placeholder="(the template's name)" onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <fieldset>
            <legend>Start from</legend>
            <label class="check">
              <input type="radio" name="template" checked={template === ''} onChange={() => setTemplate('')} /> A blank agent
            </label>
            {templates.map((t) => (
              <label class="check" key={t.id}>
                <input type="radio" name="template" value={t.id} checked={template === t.id} onChange={() => setTemplate(t.id)} />
                <span>
                  <b>{t.name}</b> <small>({t.workflowType.replace('_', ' ')})</small>
                  <br />
                  <small>{t.description}</small>
                </span>
              </label>
            ))}
          </fieldset>
          <button type="submit" disabled={act.busy}>Create</button>
        </form>
      )}
      <ErrorNote error={load.error || act.error} />
      {agents === null ? (
        <p>Loading…</p>
      ) : agents.length === 0 ? (
        <p class="empty">No agents{search ? ` match “${search}”` : ' yet'}.</p>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th>Name</th>
              <th class="wide">Type</th>
              <th class="wide">Updated</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {agents.map((a) => (
              <tr key={a._id}>
                <td>
                  <a href={`#/agents/${encodeURIComponent(a._id)}`}>{a.name}</a>
                  {a.description && <div class="sub">{a.description}</div>}
                </td>
                <td class="wide">{a.workflowType.replace('_', ' ')}</td>
                <td class="wide">{when(a.updatedAt)}</td>
                <td>
                  <button type="button" class="link" disabled={act.busy} onClick={() => void archive(a)}>{a.archived ? 'Unarchive' : 'Archive'}</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
