// The console's only way to the server: fetch with the session cookie, the CSRF header on writes, and the API's
// error envelopes turned into one ApiError with a readable message.
const meta = (name: string, fallback: string) => document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content || fallback;
/** The agent platform prefix the server was started with (PARLEY_ATOMS_PREFIX); the page carries it. */
export const ATOMS = meta('parley-atoms', '/atoms/v1');
/** The inference API prefix (PARLEY_WAVES_PREFIX), when the page names it. */
export const WAVES = meta('parley-waves', '/waves/v1');

export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly body: unknown) {
    super(message);
  }
}

let csrf: string | null = null;
export const setCsrf = (token: string | null) => {
  csrf = token;
};

/** The message of an error body in any of the API's shapes ({errors: [...]}, {error}, {message}). */
export function messageOf(body: unknown, status: number): string {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if (Array.isArray(b.errors) && b.errors.length) return b.errors.map(String).join('; ');
    if (typeof b.error === 'string') return b.error;
    if (typeof b.message === 'string') return b.message;
  }
  return `HTTP ${status}`;
}

/** Calls an agent platform route (path after the prefix); resolves to `data` of the envelope. */
export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrf) headers['X-CSRF-Token'] = csrf;
  const res = await fetch(`${ATOMS}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  if (!res.ok) throw new ApiError(res.status, messageOf(parsed, res.status), parsed);
  return ((parsed as { data?: T } | null)?.data ?? parsed) as T;
}

export interface Session {
  csrfToken: string;
  expiresAt: string;
  organizationId: string;
  keyName: string;
}

export async function signIn(apiKey: string): Promise<Session> {
  const s = await api<Session>('POST', '/auth/session', { apiKey });
  setCsrf(s.csrfToken);
  return s;
}

export async function currentSession(): Promise<Session | null> {
  try {
    const s = await api<Session>('GET', '/auth/session');
    setCsrf(s.csrfToken);
    return s;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

export async function signOut(): Promise<void> {
  await api('DELETE', '/auth/session');
  setCsrf(null);
}

/** A short-lived `wat_` token for the inference API, which does not take the session cookie. */
export async function accessToken(): Promise<string> {
  return (await api<{ access_token: string }>('POST', '/auth/session/access-token')).access_token;
}

/** Calls an inference API route with an access token; resolves to the response (errors as ApiError). */
export async function inference(method: string, path: string, token: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${WAVES}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit' });
  if (!res.ok) {
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    // Synthesis errors are `{error: <name>, message}`: the message says what was wrong.
    const message = (parsed as { message?: unknown } | null)?.message;
    throw new ApiError(res.status, typeof message === 'string' ? message : messageOf(parsed, res.status), parsed);
  }
  return res;
}
