// Telephony: the organization's numbers (rent from the platform's free numbers, release), SIP trunks inbound and
// outbound (create, edit, delete; a trunk password goes in and is never shown back: reads carry `hasAuthPassword`),
// and who answers what (agent <- number or inbound trunk).
import { useEffect, useState } from 'preact/hooks';
import { api } from './api';
import { ErrorNote, useAction, when } from './ui';

interface NumberProduct {
  _id: string;
  attributes: { phoneNumber: string; provider: string; countryCode: string | null; areaCode: string | null };
  agent: { _id: string; name: string } | null;
  createdAt: string;
}
interface Available {
  phoneNumber: string;
  countryCode: string;
  areaCode: string | null;
  provider: string;
}
interface Trunk {
  _id: string;
  direction: 'inbound' | 'outbound';
  name: string;
  numbers: string[];
  allowedAddresses?: string[];
  allowedNumbers?: string[];
  authUsername: string | null;
  hasAuthPassword: boolean;
  mediaEncryption: string;
  noiseSuppression?: boolean;
  ringingTimeoutSecs?: number | null;
  maxCallDurationSecs?: number | null;
  address?: string;
  transport?: string;
  cpsLimit?: number | null;
  updatedAt: string;
}
interface Answer {
  agentId: string;
  sourceKind: 'phoneNumber' | 'sipTrunk';
  sourceId: string;
  phoneNumbers: string[];
}
interface AgentRef {
  _id: string;
  name: string;
}

/** "a, b c" -> ["a", "b", "c"]. */
const list = (text: string) => text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);

function Numbers({ numbers, onChanged }: { numbers: NumberProduct[]; onChanged: () => Promise<void> }) {
  const [country, setCountry] = useState('US');
  const [area, setArea] = useState('');
  const [available, setAvailable] = useState<Available[] | null>(null);
  const act = useAction();
  const search = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const q = new URLSearchParams({ countryCode: country.trim() });
      if (area.trim()) q.set('areaCode', area.trim());
      setAvailable(await api<Available[]>('GET', `/product/get-available-numbers?${q}`));
    });
  };
  const rent = (n: Available) =>
    act.run(async () => {
      await api('POST', '/product/rent-number', { phoneNumber: n.phoneNumber, provider: n.provider });
      setAvailable((a) => a && a.filter((x) => x.phoneNumber !== n.phoneNumber));
      await onChanged();
    });
  const release = (n: NumberProduct) =>
    act.run(async () => {
      if (!confirm(`Give ${n.attributes.phoneNumber} back to the platform?`)) return;
      await api('POST', '/product/release-number', { productId: n._id });
      await onChanged();
    });
  return (
    <section aria-label="Numbers" class="card">
      <h2>Numbers</h2>
      {numbers.length === 0 ? <p class="empty">The organization holds no platform numbers.</p> : (
        <table class="list numbers">
          <thead><tr><th>Number</th><th class="wide">Provider</th><th>Answered by</th><th class="wide">Since</th><th /></tr></thead>
          <tbody>
            {numbers.map((n) => (
              <tr key={n._id}>
                <td>{n.attributes.phoneNumber}</td>
                <td class="wide">{n.attributes.provider}</td>
                <td>{n.agent ? <a href={`#/agents/${encodeURIComponent(n.agent._id)}`}>{n.agent.name}</a> : '—'}</td>
                <td class="wide">{when(n.createdAt)}</td>
                <td class="actions"><button type="button" class="link" disabled={act.busy} onClick={() => void release(n)}>Release</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="row" aria-label="Find numbers to rent" onSubmit={search}>
        <label>
          Country
          <input name="countryCode" maxLength={2} value={country} onInput={(e) => setCountry((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Area code
          <input name="areaCode" inputMode="numeric" value={area} placeholder="any" onInput={(e) => setArea((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={act.busy}>Find numbers</button>
      </form>
      <ErrorNote error={act.error} />
      {available && (available.length === 0 ? <p class="empty">No free numbers there. The operator adds them with <code>npm run numbers -- add</code>.</p> : (
        <ul class="plain" aria-label="Available numbers">
          {available.map((n) => (
            <li key={n.phoneNumber}>
              {n.phoneNumber} <span class="sub">{n.provider}</span> <button type="button" class="link" disabled={act.busy} onClick={() => void rent(n)}>Rent</button>
            </li>
          ))}
        </ul>
      ))}
    </section>
  );
}

interface TrunkFormState {
  name: string;
  numbers: string;
  allowedAddresses: string;
  allowedNumbers: string;
  authUsername: string;
  authPassword: string;
  clearCredentials: boolean;
  mediaEncryption: string;
  noiseSuppression: boolean;
  ringingTimeoutSecs: string;
  maxCallDurationSecs: string;
  address: string;
  transport: string;
  cpsLimit: string;
}

function formOf(t: Trunk | null): TrunkFormState {
  return {
    name: t?.name ?? '',
    numbers: (t?.numbers ?? []).join(', '),
    allowedAddresses: (t?.allowedAddresses ?? []).join(', '),
    allowedNumbers: (t?.allowedNumbers ?? []).join(', '),
    authUsername: t?.authUsername ?? '',
    authPassword: '',
    clearCredentials: false,
    mediaEncryption: t?.mediaEncryption ?? 'allow',
    noiseSuppression: t?.noiseSuppression ?? false,
    ringingTimeoutSecs: t?.ringingTimeoutSecs == null ? '' : String(t.ringingTimeoutSecs),
    maxCallDurationSecs: t?.maxCallDurationSecs == null ? '' : String(t.maxCallDurationSecs),
    address: t?.address ?? '',
    transport: t?.transport ?? 'udp',
    cpsLimit: t?.cpsLimit == null ? '' : String(t.cpsLimit),
  };
}

function int(label: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${label}: a whole number from ${min} to ${max}`);
  return n;
}

/** The create body, or a PATCH body of the fields that changed; the password only when one was typed. */
function trunkBody(direction: 'inbound' | 'outbound', f: TrunkFormState, trunk: Trunk | null): Record<string, unknown> {
  const all: Record<string, unknown> = { name: f.name.trim(), numbers: list(f.numbers), mediaEncryption: f.mediaEncryption };
  if (direction === 'inbound') {
    Object.assign(all, { allowedAddresses: list(f.allowedAddresses), allowedNumbers: list(f.allowedNumbers), noiseSuppression: f.noiseSuppression });
    if (f.ringingTimeoutSecs.trim()) all.ringingTimeoutSecs = int('Ringing timeout', f.ringingTimeoutSecs, 1, 120);
    if (f.maxCallDurationSecs.trim()) all.maxCallDurationSecs = int('Longest call', f.maxCallDurationSecs, 60, 14400);
  } else {
    if (f.cpsLimit.trim()) all.cpsLimit = int('Calls per second', f.cpsLimit, 1, 50);
    if (!trunk) Object.assign(all, { address: f.address.trim(), transport: f.transport });
  }
  const body: Record<string, unknown> = {};
  const before = trunk ? (formOf(trunk) as unknown as Record<string, unknown>) : null;
  for (const [k, v] of Object.entries(all)) {
    if (!before) body[k] = v;
    else if (JSON.stringify(v) !== JSON.stringify(Array.isArray(v) ? list(String(before[k])) : k.endsWith('Secs') || k === 'cpsLimit' ? Number(before[k]) : before[k])) body[k] = v;
  }
  if (f.clearCredentials) body.authUsername = null;
  else {
    const user = f.authUsername.trim();
    if (!trunk || user !== (trunk.authUsername ?? '')) body.authUsername = user || null;
    if (f.authPassword) body.authPassword = f.authPassword;
    if (!trunk && !user) delete body.authUsername;
  }
  return body;
}

function TrunkForm({ direction, trunk, onDone }: { direction: 'inbound' | 'outbound'; trunk: Trunk | null; onDone: (changed: boolean) => void }) {
  const [f, setF] = useState<TrunkFormState>(formOf(trunk));
  const act = useAction();
  const text = (k: keyof TrunkFormState) => (e: Event) => {
    const t = e.target as HTMLInputElement;
    const v = t.type === 'checkbox' ? t.checked : t.value;
    setF((x) => ({ ...x, [k]: v }));
  };
  const save = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const body = trunkBody(direction, f, trunk);
      if (trunk) {
        if (Object.keys(body).length) await api('PATCH', `/sip-trunk/${encodeURIComponent(trunk._id)}`, body);
      } else await api('POST', `/sip-trunk/${direction}`, body);
      // The password leaves the page's state once sent.
      setF((x) => ({ ...x, authPassword: '' }));
      onDone(true);
    });
  };
  const title = trunk ? `Edit trunk ${trunk.name}` : `New ${direction} trunk`;
  return (
    <form class="card" aria-label={title} onSubmit={save}>
      <h3>{title}</h3>
      <div class="row">
        <label>
          Name
          <input name="name" required value={f.name} onInput={text('name')} />
        </label>
        <label>
          {direction === 'inbound' ? 'Numbers callers dial' : 'Caller IDs'}
          <input name="numbers" placeholder="+15550100, +15550101" value={f.numbers} onInput={text('numbers')} />
        </label>
      </div>
      {direction === 'outbound' && (
        <div class="row">
          <label>
            Carrier address
            <input name="address" placeholder="sip.carrier.example:5060" value={f.address} disabled={!!trunk} onInput={text('address')} />
          </label>
          <label>
            Transport
            <select name="transport" value={f.transport} disabled={!!trunk} onChange={text('transport')}>
              {['udp', 'tcp', 'tls'].map((t) => <option key={t} value={t}>{t}</option>)}
            </select>
          </label>
          <label>
            Calls per second
            <input name="cpsLimit" type="number" min="1" max="50" placeholder="1" value={f.cpsLimit} onInput={text('cpsLimit')} />
          </label>
        </div>
      )}
      {direction === 'inbound' && (
        <>
          <div class="row">
            <label>
              Allowed addresses (IPs or CIDRs; empty: any)
              <input name="allowedAddresses" placeholder="203.0.113.0/24" value={f.allowedAddresses} onInput={text('allowedAddresses')} />
            </label>
            <label>
              Allowed caller numbers (empty: any)
              <input name="allowedNumbers" value={f.allowedNumbers} onInput={text('allowedNumbers')} />
            </label>
          </div>
          <div class="row">
            <label>
              Ringing timeout (s)
              <input name="ringingTimeoutSecs" type="number" min="1" max="120" placeholder="30" value={f.ringingTimeoutSecs} onInput={text('ringingTimeoutSecs')} />
            </label>
            <label>
              Longest call (s)
              <input name="maxCallDurationSecs" type="number" min="60" max="14400" placeholder="3600" value={f.maxCallDurationSecs} onInput={text('maxCallDurationSecs')} />
            </label>
            <label class="check">
              <input type="checkbox" name="noiseSuppression" checked={f.noiseSuppression} onChange={text('noiseSuppression')} /> Noise suppression
            </label>
          </div>
        </>
      )}
      <div class="row">
        <label>
          Media encryption
          <select name="mediaEncryption" value={f.mediaEncryption} onChange={text('mediaEncryption')}>
            {['disable', 'allow', 'require'].map((m) => <option key={m} value={m}>{m}</option>)}
          </select>
        </label>
        <label>
          Digest username
          <input name="authUsername" autocomplete="off" value={f.authUsername} disabled={f.clearCredentials} onInput={text('authUsername')} />
        </label>
        <label>
          Digest password
          <input name="authPassword" type="password" autocomplete="new-password" value={f.authPassword} disabled={f.clearCredentials}
            placeholder={trunk?.hasAuthPassword ? '(set; type to replace)' : ''} onInput={text('authPassword')} />
        </label>
        {trunk?.hasAuthPassword && (
          <label class="check">
            <input type="checkbox" checked={f.clearCredentials} onChange={text('clearCredentials')} /> Remove the credentials
          </label>
        )}
      </div>
      <ErrorNote error={act.error} />
      <div class="row">
        <button type="submit" disabled={act.busy}>{trunk ? 'Save trunk' : 'Create trunk'}</button>
        <button type="button" class="link" onClick={() => onDone(false)}>Cancel</button>
      </div>
    </form>
  );
}

function Trunks({ trunks, onChanged }: { trunks: Trunk[]; onChanged: () => Promise<void> }) {
  const [editing, setEditing] = useState<{ direction: 'inbound' | 'outbound'; trunk: Trunk | null } | null>(null);
  const act = useAction();
  const remove = (t: Trunk) =>
    act.run(async () => {
      if (!confirm(`Delete the trunk ${t.name}?`)) return;
      await api('DELETE', `/sip-trunk/${encodeURIComponent(t._id)}`);
      await onChanged();
    });
  const done = (changed: boolean) => {
    setEditing(null);
    if (changed) void onChanged();
  };
  return (
    <section aria-label="SIP trunks" class="card">
      <div class="row">
        <h2>SIP trunks</h2>
        <button type="button" disabled={!!editing} onClick={() => setEditing({ direction: 'inbound', trunk: null })}>New inbound trunk</button>
        <button type="button" disabled={!!editing} onClick={() => setEditing({ direction: 'outbound', trunk: null })}>New outbound trunk</button>
      </div>
      {editing && <TrunkForm key={editing.trunk?._id ?? editing.direction} direction={editing.direction} trunk={editing.trunk} onDone={done} />}
      <ErrorNote error={act.error} />
      {trunks.length === 0 ? <p class="empty">No trunks yet.</p> : (
        <table class="list trunks">
          <thead><tr><th>Name</th><th>Numbers</th><th class="wide">Carrier</th><th class="wide">Credentials</th><th /></tr></thead>
          <tbody>
            {trunks.map((t) => (
              <tr key={t._id}>
                <td><b>{t.name}</b> <span class="tag">{t.direction}</span><div class="sub">{t._id}</div></td>
                <td>{t.numbers.join(', ') || '—'}</td>
                <td class="wide">{t.direction === 'outbound' ? `${t.address ?? ''} (${t.transport ?? ''})` : t.allowedAddresses?.length ? `from ${t.allowedAddresses.join(', ')}` : 'any address'}</td>
                <td class="wide">{t.authUsername ? `${t.authUsername}${t.hasAuthPassword ? ' · password set' : ''}` : 'none'}</td>
                <td class="actions">
                  <button type="button" class="link" disabled={!!editing} onClick={() => setEditing({ direction: t.direction, trunk: t })}>Edit</button>
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

function Answers({ agents, answers, numbers, trunks, onChanged }: { agents: AgentRef[]; answers: Answer[]; numbers: NumberProduct[]; trunks: Trunk[]; onChanged: () => Promise<void> }) {
  const [agent, setAgent] = useState('');
  const [source, setSource] = useState('');
  const act = useAction();
  const inbound = trunks.filter((t) => t.direction === 'inbound');
  const sourceName = (a: Answer) =>
    a.sourceKind === 'sipTrunk' ? `trunk ${inbound.find((t) => t._id === a.sourceId)?.name ?? a.sourceId}` : `number ${numbers.find((n) => n._id === a.sourceId)?.attributes.phoneNumber ?? a.phoneNumbers[0] ?? a.sourceId}`;
  const attach = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const [sourceKind, sourceId] = source.split(':');
      await api('POST', `/agent/${encodeURIComponent(agent)}/answers`, { sourceKind, sourceId });
      setSource('');
      await onChanged();
    });
  };
  const detach = (a: Answer) =>
    act.run(async () => {
      await api('DELETE', `/agent/${encodeURIComponent(a.agentId)}/answers/${encodeURIComponent(a.sourceId)}`);
      await onChanged();
    });
  return (
    <section aria-label="Who answers" class="card">
      <h2>Who answers</h2>
      {answers.length === 0 ? <p class="empty">No agent answers a number or trunk yet.</p> : (
        <table class="list answers">
          <thead><tr><th>Agent</th><th>Answers</th><th class="wide">Numbers</th><th /></tr></thead>
          <tbody>
            {answers.map((a) => (
              <tr key={`${a.agentId}:${a.sourceId}`}>
                <td><a href={`#/agents/${encodeURIComponent(a.agentId)}`}>{agents.find((x) => x._id === a.agentId)?.name ?? a.agentId}</a></td>
                <td>{sourceName(a)}</td>
                <td class="wide">{a.phoneNumbers.join(', ') || '—'}</td>
                <td class="actions"><button type="button" class="link" disabled={act.busy} onClick={() => void detach(a)}>Stop answering</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="row" aria-label="New answer" onSubmit={attach}>
        <select aria-label="Answering agent" value={agent} onChange={(e) => setAgent((e.target as HTMLSelectElement).value)}>
          <option value="">Choose an agent</option>
          {agents.map((a) => <option key={a._id} value={a._id}>{a.name}</option>)}
        </select>
        <select aria-label="Number or trunk" value={source} onChange={(e) => setSource((e.target as HTMLSelectElement).value)}>
          <option value="">Choose a number or inbound trunk</option>
          {numbers.map((n) => <option key={n._id} value={`phoneNumber:${n._id}`}>number {n.attributes.phoneNumber}</option>)}
          {inbound.map((t) => <option key={t._id} value={`sipTrunk:${t._id}`}>trunk {t.name}{t.numbers.length ? ` (${t.numbers.join(', ')})` : ''}</option>)}
        </select>
        <button type="submit" disabled={act.busy || !agent || !source}>Answer</button>
      </form>
      <p class="hint">A number answered by one agent wins over its trunk answered by another.</p>
      <ErrorNote error={act.error} />
    </section>
  );
}

export function TelephonyPage() {
  const [numbers, setNumbers] = useState<NumberProduct[]>([]);
  const [trunks, setTrunks] = useState<Trunk[]>([]);
  const [agents, setAgents] = useState<AgentRef[]>([]);
  const [answers, setAnswers] = useState<Answer[]>([]);
  const [loaded, setLoaded] = useState(false);
  const load = useAction();
  const refresh = () =>
    load.run(async () => {
      const [n, t, a] = await Promise.all([
        api<NumberProduct[]>('GET', '/product/phone-numbers'),
        api<{ trunks: Trunk[] }>('GET', '/sip-trunk'),
        api<{ agents: AgentRef[] }>('GET', '/agent?offset=100'),
      ]);
      setNumbers(n);
      setTrunks(t.trunks);
      setAgents(a.agents);
      // The API lists answers per agent.
      setAnswers((await Promise.all(a.agents.map((x) => api<{ answers: Answer[] }>('GET', `/agent/${encodeURIComponent(x._id)}/answers`)))).flatMap((r) => r.answers));
      setLoaded(true);
    });
  useEffect(() => {
    void refresh();
  }, []);
  return (
    <section class="telephony-page">
      <div class="bar"><h1>Telephony</h1></div>
      <ErrorNote error={load.error} />
      {!loaded ? !load.error && <p>Loading…</p> : (
        <>
          <Numbers numbers={numbers} onChanged={refresh} />
          <Trunks trunks={trunks} onChanged={refresh} />
          <Answers agents={agents} answers={answers} numbers={numbers} trunks={trunks} onChanged={refresh} />
        </>
      )}
    </section>
  );
}
