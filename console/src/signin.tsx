// Sign in with an API key: it is sent once, and the server answers with an HttpOnly session cookie.
import { useState } from 'preact/hooks';
import { signIn, type Session } from './api';
import { ErrorNote, useAction } from './ui';

export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [key, setKey] = useState('');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => onSignedIn(await signIn(key.trim())));
  };
  return (
    <main class="signin">
      <form onSubmit={submit} aria-label="Sign in">
        <h1>Parley</h1>
        <label>
          API key
          <input type="password" name="apiKey" autocomplete="off" required placeholder="sk_…" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={action.busy || !key.trim()}>Sign in</button>
        <ErrorNote error={action.error} />
        <p class="hint">The key stays in this form: the browser keeps only a session cookie, which ends when you sign out, when it expires, or when the key is deleted.</p>
      </form>
    </main>
  );
}
