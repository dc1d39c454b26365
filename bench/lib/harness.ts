// Shared bench plumbing: integer settings from the environment, and the server's health at the end of a run.
import type { TestServer } from '../../test/support/server.js';

export function intEnv(name: string, dflt: number, min: number): number {
  const raw = process.env[name];
  const n = raw === undefined || raw === '' ? dflt : Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}`);
  return n;
}

/** Stops the server; returns its exit code and what it logged at warn or above (or on stderr), and whether it died early. */
export async function stopAndCollectProblems(server: TestServer): Promise<{ exit: number | null; problems: string[] }> {
  const problems = server.logs.filter((l) => {
    try {
      return ((JSON.parse(l) as { level?: number }).level ?? 0) >= 40;
    } catch {
      return l.trim().length > 0;
    }
  });
  const aliveAtEnd = server.exitCode === null;
  const exit = await server.stop();
  if (!aliveAtEnd) problems.push(`server exited during the run with code ${exit}`);
  return { exit, problems };
}

/** Benches measure how far the server goes: the concurrent-session caps (sized from these very benches) are lifted. */
export const UNCAPPED_SESSIONS = {
  PARLEY_MAX_SPEECH_SESSIONS: '10000',
  PARLEY_MAX_SPEECH_SESSIONS_PER_KEY: '10000',
  PARLEY_MAX_CHAT_SESSIONS: '10000',
  PARLEY_MAX_CHAT_SESSIONS_PER_KEY: '10000',
};
