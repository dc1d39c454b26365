// One agent: its configuration (the branch's draft, or the branch tip when there is none), saving the draft with
// optimistic concurrency (a 409 conflict offers re-read and merge), publishing (a 202 scan followed to its end),
// revisions with a side-by-side diff, restore, make live, and the configuration freeze. Language, turn-taking, tools
// and "play sample" are in agent-settings.tsx.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from './api';
import { ErrorNote, useAction, when } from './ui';
import { TalkPanel } from './talk';
import { LanguageFields, PlaySample, ToolRefsField, TurnFields, settingsOf, settingsPatch, type SettingsForm } from './agent-settings';

type Config = Record<string, unknown>;
interface Agent extends Config {
  _id: string;
  name: string;
  workflowType: string;
  liveBranchId: string | null;
  configFreeze: { reason?: string | null } | null;
}
interface Revision {
  _id: string;
  status: string;
  revisionNumber: number | null;
  draftRevision: number | null;
  label: string | null;
  publishedAt: string | null;
  publishedByName: string | null;
  securityCheck: { status: string; reason?: string | null; findings?: unknown[] } | null;
}
interface BranchView {
  branch: { _id: string; name: string; isDefault: boolean; draftRevision: number; openDraftId: string | null; headRevisionId: string | null };
  isLive: boolean;
  hasOpenDraft: boolean;
}
interface DraftView {
  latest: Revision;
  editCount: number;
  editHistory: { revision: number; changedSections: string[]; editorName: string | null; timestamp: string }[];
}
interface Diff {
  unchangedSections: string[];
  diffs: { section: string; changes: { path: string; oldValue: unknown; newValue: unknown }[] }[];
}

/** The fields this editor changes, read from a resolved configuration. */
interface Form extends SettingsForm {
  firstMessage: string;
  prompt: string;
  workflowGraph: string;
  voiceId: string;
  speed: string;
  allowInterruptions: boolean;
}

const voiceConfig = (c: Config) => ((c.synthesizer as Config | undefined)?.voiceConfig as Config | undefined) ?? {};
function formOf(c: Config): Form {
  return {
    firstMessage: String(c.firstMessage ?? ''),
    prompt: String(c.prompt ?? ''),
    workflowGraph: c.workflowGraph ? JSON.stringify(c.workflowGraph, null, 2) : '',
    voiceId: String(voiceConfig(c).voiceId ?? ''),
    speed: String((c.synthesizer as Config | undefined)?.speed ?? ''),
    allowInterruptions: c.allowInterruptions !== false,
    ...settingsOf(c),
  };
}

/** The draft patch for the fields that differ from `base`; throws on a workflow graph that is not JSON. */
function patchOf(form: Form, base: Form, workflowType: string): Config {
  const p: Config = {};
  if (form.firstMessage !== base.firstMessage) p.firstMessage = form.firstMessage;
  if (workflowType === 'single_prompt' && form.prompt !== base.prompt) p.prompt = form.prompt;
  if (workflowType === 'workflow_graph' && form.workflowGraph !== base.workflowGraph) {
    try {
      p.workflowGraph = JSON.parse(form.workflowGraph);
    } catch (err) {
      throw new Error(`Workflow graph: not valid JSON (${err instanceof Error ? err.message : String(err)})`);
    }
  }
  if (form.voiceId !== base.voiceId || form.speed !== base.speed) {
    const synthesizer: Config = {};
    if (form.voiceId !== base.voiceId) synthesizer.voiceConfig = { voiceId: form.voiceId };
    if (form.speed !== base.speed) synthesizer.speed = Number(form.speed);
    p.synthesizer = synthesizer;
  }
  if (form.allowInterruptions !== base.allowInterruptions) p.allowInterruptions = form.allowInterruptions;
  return { ...p, ...settingsPatch(form, base) };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const show = (v: unknown) => (v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v, null, 2));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function AgentPage({ agentId }: { agentId: string }) {
  const a = `/agent/${encodeURIComponent(agentId)}`;
  const [agent, setAgent] = useState<Agent | null>(null);
  const [branches, setBranches] = useState<BranchView[]>([]);
  const [branchId, setBranchId] = useState<string | null>(null);
  const [draft, setDraft] = useState<DraftView | null>(null);
  const [base, setBase] = useState<Form | null>(null);
  const [form, setForm] = useState<Form | null>(null);
  const [revisions, setRevisions] = useState<Revision[]>([]);
  const [pick, setPick] = useState<string[]>([]);
  const [diff, setDiff] = useState<Diff | null>(null);
  const [label, setLabel] = useState('');
  const [publishNote, setPublishNote] = useState<string | null>(null);
  const [findings, setFindings] = useState<Revision['securityCheck']>(null);
  const [gender, setGender] = useState('');
  const [voices, setVoices] = useState<{ voiceId: string; displayName?: string }[]>([]);
  const load = useAction();
  const act = useAction();
  /** The branch the last load read: choosing it there does not load again (a second load would drop fresh edits). */
  const loadedBranch = useRef<string | null>(null);
  const b = branchId ? `${a}/branches/${encodeURIComponent(branchId)}` : null;
  const branch = branches.find((x) => x.branch._id === branchId) ?? null;

  /** Reads the agent, the branches and the chosen branch's draft (or tip); keeps edits of fields in `keep`. */
  const reload = (keep?: Partial<Form>) =>
    load.run(async () => {
      const ag = await api<Agent>('GET', a);
      setAgent(ag);
      const bs = (await api<{ branches: BranchView[] }>('GET', `${a}/branches`)).branches;
      setBranches(bs);
      const chosen = bs.find((x) => x.branch._id === branchId) ?? bs.find((x) => x.isLive) ?? bs[0];
      if (!chosen) return;
      loadedBranch.current = chosen.branch._id;
      setBranchId(chosen.branch._id);
      const bp = `${a}/branches/${encodeURIComponent(chosen.branch._id)}`;
      let d: DraftView | null = null;
      try {
        d = await api<DraftView>('GET', `${bp}/draft`);
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
      }
      setDraft(d);
      // The configuration being edited: the open draft's, else the branch tip's (its head revision), else the agent's.
      const ref = d ? `draftId=${d.latest._id}` : chosen.branch.headRevisionId ? `versionId=${chosen.branch.headRevisionId}` : '';
      const cfg = ref ? await api<Config>('GET', `${a}?${ref}`) : ag;
      const f = formOf(cfg);
      setGender(String(voiceConfig(cfg).gender ?? ''));
      setBase(f);
      setForm({ ...f, ...keep });
      setRevisions((await api<{ revisions: Revision[] }>('GET', `${bp}/revisions?limit=50`)).revisions);
    });
  useEffect(() => {
    if (branchId !== null && branchId === loadedBranch.current) return;
    void reload();
  }, [agentId, branchId]);

  if (!agent || !form || !base) return <section><ErrorNote error={load.error} />{!load.error && <p>Loading…</p>}</section>;
  const set = (k: keyof Form) => (e: Event) => {
    const t = e.target as HTMLInputElement;
    const v = t.type === 'checkbox' ? t.checked : t.value;
    setForm((f) => f && { ...f, [k]: v });
  };
  const put = (k: keyof Form, v: unknown) => setForm((f) => f && ({ ...f, [k]: v } as Form));
  const edited = (Object.keys(form) as (keyof Form)[]).filter((k) => !same(form[k], base[k]));
  const expectedRevision = draft?.latest.draftRevision ?? branch?.branch.draftRevision ?? 0;

  const save = () =>
    act.run(async () => {
      if (!b) return;
      const patch = patchOf(form, base, agent.workflowType);
      if (!Object.keys(patch).length) return;
      await api('PUT', `${b}/draft`, { ...patch, expectedRevision });
      await reload();
    });
  /** After a conflict: re-read the latest draft and put this page's edits back on top of it. */
  const merge = () => {
    const mine: Partial<Form> = {};
    for (const k of edited) (mine as Record<string, unknown>)[k] = form[k];
    act.setError(null);
    void reload(mine);
  };
  const publish = () =>
    act.run(async () => {
      if (!b) return;
      setFindings(null);
      setPublishNote('Publishing…');
      const res = await api<{ state: 'committed' | 'scanning' }>('POST', `${b}/draft/publish`, label.trim() ? { label: label.trim() } : {});
      if (res.state === 'scanning') {
        setPublishNote('Security scan running…');
        // 202: the newest revision of the branch is the one being scanned; poll it until it is published or its scan fails.
        const newest = (await api<{ revisions: Revision[] }>('GET', `${b}/revisions?limit=1`)).revisions[0];
        for (let i = 0; newest && i < 300; i++) {
          const r = await api<Revision>('GET', `${b}/revisions/${encodeURIComponent(newest._id)}`);
          if (r.status === 'published') break;
          if (r.securityCheck?.status === 'failed') {
            setFindings(r.securityCheck);
            setPublishNote(`Revision ${r.revisionNumber ?? ''} failed its security scan`);
            await reload();
            return;
          }
          await sleep(1000);
        }
      }
      setPublishNote('Published');
      setLabel('');
      await reload();
    });
  const discard = () =>
    act.run(async () => {
      if (!b) return;
      await api('DELETE', `${b}/draft`);
      await reload();
    });
  const restore = (r: Revision) =>
    act.run(async () => {
      if (!b) return;
      await api('POST', `${b}/revisions/${encodeURIComponent(r._id)}/restore`, {});
      await reload();
    });
  const makeLive = () =>
    act.run(async () => {
      if (!b) return;
      await api('POST', `${b}/live`);
      await reload();
    });
  const freeze = (on: boolean) =>
    act.run(async () => {
      if (on) await api('POST', `${a}/config-freeze`, { reason: 'Frozen from the console' });
      else await api('DELETE', `${a}/config-freeze`);
      await reload();
    });
  const compare = () =>
    act.run(async () => {
      const [x, y] = [...pick].sort((p, q) => revNumber(revisions, p) - revNumber(revisions, q));
      setDiff(await api<Diff>('GET', `${a}/diff?a=${encodeURIComponent(x as string)}&b=${encodeURIComponent(y as string)}`));
    });
  const toggle = (id: string) => setPick(pick.includes(id) ? pick.filter((p) => p !== id) : [...pick.slice(-1), id]);
  const conflict = act.error instanceof ApiError && act.error.status === 409 ? act.error : null;

  return (
    <section class="agent">
      <div class="bar">
        <h1>{agent.name}</h1>
        <span class="tag">{agent.workflowType.replace('_', ' ')}</span>
        {agent.configFreeze ? <span class="tag warn">frozen</span> : null}
        <label>
          Branch{' '}
          <select value={branchId ?? ''} onChange={(e) => setBranchId((e.target as HTMLSelectElement).value)}>
            {branches.map((x) => (
              <option key={x.branch._id} value={x.branch._id}>
                {x.branch.name}
                {x.isLive ? ' (live)' : ''}
              </option>
            ))}
          </select>
        </label>
        {branch && !branch.isLive && <button type="button" onClick={() => void makeLive()} disabled={act.busy}>Make live</button>}
        <button type="button" class="link" onClick={() => void freeze(!agent.configFreeze)} disabled={act.busy}>
          {agent.configFreeze ? 'Lift the freeze' : 'Freeze configuration'}
        </button>
      </div>
      <ErrorNote error={load.error} />
      <ErrorNote error={act.error}>
        {conflict && (
          <div>
            <p>Someone else changed this draft since you read it.</p>
            <ConflictTable body={conflict.body} />
            <button type="button" onClick={merge}>Re-read and keep my edits</button>
          </div>
        )}
      </ErrorNote>

      <form class="card config" aria-label="Configuration" noValidate onSubmit={(e) => (e.preventDefault(), void save())}>
        <h2>{draft ? `Draft (edit ${draft.latest.draftRevision})` : 'Configuration'}</h2>
        <label>
          First message
          <input name="firstMessage" value={form.firstMessage} onInput={set('firstMessage')} />
        </label>
        {agent.workflowType === 'single_prompt' ? (
          <label>
            Prompt
            <textarea name="prompt" rows={10} value={form.prompt} onInput={set('prompt')} />
          </label>
        ) : (
          <label>
            Workflow graph (JSON)
            <textarea name="workflowGraph" class="code" rows={14} value={form.workflowGraph} onInput={set('workflowGraph')} />
          </label>
        )}
        <div class="row voice">
          <label>
            Voice
            <input name="voiceId" list="voice-ids" value={form.voiceId} onInput={set('voiceId')} />
          </label>
          <label>
            Speed
            <input name="speed" type="number" step="0.1" min="0.5" max="2" value={form.speed} onInput={set('speed')} />
          </label>
          <PlaySample voiceId={form.voiceId} gender={gender} speed={form.speed} text={form.firstMessage} language={form.languageDefault} supported={form.languagesSupported} onVoices={setVoices} />
          <datalist id="voice-ids">
            {voices.map((v) => <option key={v.voiceId} value={v.voiceId}>{v.displayName ?? v.voiceId}</option>)}
          </datalist>
        </div>
        <LanguageFields form={form} set={put} />
        <TurnFields form={form} set={put} allowInterruptions={form.allowInterruptions} setAllow={(v) => put('allowInterruptions', v)} />
        <ToolRefsField refs={form.toolRefs} set={(refs) => put('toolRefs', refs)} />
        <div class="row">
          <button type="submit" disabled={act.busy || edited.length === 0}>Save draft</button>
          {draft && <button type="button" class="link" disabled={act.busy} onClick={() => void discard()}>Discard draft</button>}
          <span class="sub">{edited.length ? `Unsaved: ${edited.join(', ')}` : draft ? `${draft.editCount} edit(s) in this draft` : 'No open draft'}</span>
        </div>
      </form>

      {branchId && <TalkPanel key={branchId} agentId={agentId} branchId={branchId} hasDraft={!!draft} />}

      <div class="card">
        <h2>Publish</h2>
        <div class="row">
          <input aria-label="Revision label" placeholder="Label (optional)" value={label} onInput={(e) => setLabel((e.target as HTMLInputElement).value)} />
          <button type="button" disabled={act.busy || !draft || edited.length > 0} onClick={() => void publish()}>Publish draft</button>
          {publishNote && <span class="sub" role="status">{publishNote}</span>}
        </div>
        {findings && (
          <div class="error">
            Scan {findings.status}: {findings.reason ?? ''}
            {Array.isArray(findings.findings) && <pre>{JSON.stringify(findings.findings, null, 2)}</pre>}
          </div>
        )}
        {draft && draft.editHistory.length > 0 && (
          <details>
            <summary>Draft history</summary>
            <ul>
              {draft.editHistory.map((e) => (
                <li key={e.revision}>
                  edit {e.revision}: {e.changedSections.join(', ')} by {e.editorName}
                </li>
              ))}
            </ul>
          </details>
        )}
      </div>

      <div class="card">
        <h2>Revisions</h2>
        {revisions.length === 0 ? (
          <p class="empty">Nothing published on this branch yet.</p>
        ) : (
          <>
            <table class="list revisions">
              <thead>
                <tr>
                  <th>Compare</th>
                  <th>#</th>
                  <th>Label</th>
                  <th class="wide">Published</th>
                  <th>Status</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {revisions.map((r) => (
                  <tr key={r._id}>
                    <td>
                      <input type="checkbox" aria-label={`compare revision ${r.revisionNumber}`} checked={pick.includes(r._id)} onChange={() => toggle(r._id)} />
                    </td>
                    <td>{r.revisionNumber}</td>
                    <td>{r.label ?? ''}</td>
                    <td class="wide">{when(r.publishedAt)} {r.publishedByName ? `by ${r.publishedByName}` : ''}</td>
                    <td>{r.status === 'published' ? 'published' : `scan ${r.securityCheck?.status ?? r.status}`}</td>
                    <td>
                      <button type="button" class="link" disabled={act.busy || r.status !== 'published'} onClick={() => void restore(r)}>Restore</button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <button type="button" disabled={pick.length !== 2 || act.busy} onClick={() => void compare()}>Compare selected</button>
          </>
        )}
        {diff && <DiffView diff={diff} />}
      </div>
    </section>
  );
}

const revNumber = (rs: Revision[], id: string) => rs.find((r) => r._id === id)?.revisionNumber ?? 0;

function DiffView({ diff }: { diff: Diff }) {
  const rows = diff.diffs.flatMap((d) => d.changes.map((c) => ({ section: d.section, ...c })));
  if (!rows.length) return <p class="empty">No differences.</p>;
  return (
    <table class="diff" aria-label="Differences">
      <thead>
        <tr>
          <th>Field</th>
          <th>Older</th>
          <th>Newer</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={`${r.section}:${r.path}`}>
            <td>{r.path}</td>
            <td class="old"><pre>{show(r.oldValue)}</pre></td>
            <td class="new"><pre>{show(r.newValue)}</pre></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function ConflictTable({ body }: { body: unknown }) {
  const diffs = ((body as { data?: { conflict?: { diffs?: { path: string; yourValue: unknown; latestValue: unknown }[] } } } | null)?.data?.conflict?.diffs) ?? [];
  if (!diffs.length) return null;
  return (
    <table class="diff">
      <thead>
        <tr>
          <th>Field</th>
          <th>Yours</th>
          <th>Theirs (latest)</th>
        </tr>
      </thead>
      <tbody>
        {diffs.map((d) => (
          <tr key={d.path}>
            <td>{d.path}</td>
            <td class="new"><pre>{show(d.yourValue)}</pre></td>
            <td class="old"><pre>{show(d.latestValue)}</pre></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
