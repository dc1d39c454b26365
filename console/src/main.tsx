// The console: one page app over the agent platform API, signed in with a browser session (cookie + CSRF token).
// Routes live in the URL hash (#/agents, #/agents/<id>), so the server serves one page and reloads keep the place.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { currentSession, signOut, type Session } from './api';
import { SignIn } from './signin';
import { AgentList } from './agents';
import { AgentPage } from './agent';
import { CallList, CallPage } from './calls';
import { ToolsPage } from './tools';
import { WebhooksPage } from './webhooks';
import { TelephonyPage } from './telephony';
import { ErrorNote } from './ui';

function useHash(): string {
  const [hash, setHash] = useState(location.hash || '#/agents');
  useEffect(() => {
    const on = () => setHash(location.hash || '#/agents');
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const hash = useHash();
  useEffect(() => {
    currentSession().then(setSession, (err) => {
      setError(err);
      setSession(null);
    });
  }, []);
  if (session === undefined) return <main class="loading">Loading…</main>;
  if (!session) return <SignIn onSignedIn={setSession} />;
  const [, section, id] = hash.split('/');
  const out = async () => {
    try {
      await signOut();
    } finally {
      setSession(null);
    }
  };
  return (
    <>
      <header class="top">
        <a class="brand" href="#/agents">Parley</a>
        <nav>
          <a href="#/agents" aria-current={section === 'agents' ? 'page' : undefined}>Agents</a>
          <a href="#/calls" aria-current={section === 'calls' ? 'page' : undefined}>Calls</a>
          <a href="#/tools" aria-current={section === 'tools' ? 'page' : undefined}>Tools</a>
          <a href="#/webhooks" aria-current={section === 'webhooks' ? 'page' : undefined}>Webhooks</a>
          <a href="#/telephony" aria-current={section === 'telephony' ? 'page' : undefined}>Telephony</a>
          <a href="/reference" target="_blank" rel="noopener">API reference</a>
        </nav>
        <span class="who" title={`organization ${session.organizationId}`}>{session.keyName}</span>
        <button type="button" class="link" onClick={out}>Sign out</button>
      </header>
      <main>
        <ErrorNote error={error} />
        {section === 'calls' ? (
          id ? <CallPage key={id} callId={decodeURIComponent(id)} /> : <CallList />
        ) : section === 'tools' ? (
          <ToolsPage />
        ) : section === 'webhooks' ? (
          <WebhooksPage />
        ) : section === 'telephony' ? (
          <TelephonyPage />
        ) : section === 'agents' && id ? (
          <AgentPage key={id} agentId={decodeURIComponent(id)} />
        ) : (
          <AgentList />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);
