// Caps on concurrent realtime sessions, server-wide and per owner (an API key; an organization for sessions opened
// with its wct_ token), per class: `speech` sessions run the speech models (agent voice calls, live recognition, live
// synthesis, speech-to-speech), `chat` sessions only text. A session past a cap is refused before the upgrade:
// 503 when the server is full, 429 when the owner is; both with Retry-After.
import { ApiError } from '../control-plane/errors.js';
import type { AuthContext } from '../control-plane/auth/keys.js';

export type SessionClass = 'speech' | 'chat';

export interface SessionCaps {
  server: number;
  perOwner: number;
}

export interface Lease {
  /** Gives the place back; later calls do nothing. */
  release(): void;
}

/** How long a refused client should wait before trying again (sessions last minutes; places free up within seconds). */
const RETRY_AFTER_S = 5;

export class SessionLimits {
  private readonly total = new Map<SessionClass, number>();
  private readonly byOwner = new Map<string, number>();

  constructor(private readonly caps: Record<SessionClass, SessionCaps>) {}

  /** Takes a place for one session, or throws the refusal (503 server full, 429 owner at its cap). */
  acquire(cls: SessionClass, owner: string): Lease {
    const caps = this.caps[cls];
    const ownerKey = `${cls}:${owner}`;
    const total = this.total.get(cls) ?? 0;
    const mine = this.byOwner.get(ownerKey) ?? 0;
    const headers = { 'Retry-After': String(RETRY_AFTER_S) };
    if (total >= caps.server) {
      throw new ApiError(503, `The server is at its limit of ${caps.server} concurrent ${cls} sessions; retry with backoff`, { headers });
    }
    if (mine >= caps.perOwner) {
      const who = owner.startsWith('org:') ? 'This organization' : 'This key';
      throw new ApiError(429, `${who} already has ${caps.perOwner} concurrent ${cls} sessions, its limit; close one or retry later`, { headers });
    }
    this.total.set(cls, total + 1);
    this.byOwner.set(ownerKey, mine + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.total.set(cls, (this.total.get(cls) ?? 1) - 1);
        const left = (this.byOwner.get(ownerKey) ?? 1) - 1;
        if (left > 0) this.byOwner.set(ownerKey, left);
        else this.byOwner.delete(ownerKey);
      },
    };
  }

  /** Open sessions of a class (for metrics and tests). */
  open(cls: SessionClass): number {
    return this.total.get(cls) ?? 0;
  }
}

/** The owner a session counts against: its API key (an access token counts as the key that minted it). */
export function ownerOf(auth: AuthContext | undefined): string {
  if (!auth) throw new Error('session limits need an authenticated route');
  return `key:${auth.keyId}`;
}
