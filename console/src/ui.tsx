// Small shared pieces: error notes in the API's words, dates, a busy flag for buttons.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError } from './api';

export function ErrorNote({ error, children }: { error: unknown; children?: ComponentChildren }) {
  if (!error) return null;
  const text = error instanceof ApiError ? `${error.message} (HTTP ${error.status})` : error instanceof Error ? error.message : String(error);
  return (
    <div class="error" role="alert">
      {text}
      {children}
    </div>
  );
}

export const when = (iso: unknown) => (typeof iso === 'string' && iso ? new Date(iso).toLocaleString() : '—');

/** Runs one async action at a time and keeps its error; `busy` disables the buttons that start it. */
export function useAction(): { busy: boolean; error: unknown; setError: (e: unknown) => void; run: (fn: () => Promise<void>) => Promise<void> } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}
