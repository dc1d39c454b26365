// Moments the event loop keeps free for a paced send. The dialer reserves each INVITE's slot; work that can wait a few
// milliseconds (an HTTP request about to start) asks first and, when a reservation is near, starts after that send.
// One process taking a burst of POST /conversation/outbound runs 16 handlers back to back in one poll phase (about
// 2 ms each on SQLite), and a slot due meanwhile was sent 10-30 ms late: 28-49 ms gaps at cps 50 (bench:outbound).

/** A request may start this close before a reserved send (about one request handler's first run). */
export const CLEARANCE_MS = 4;
/** A reservation that is not released this long after its time no longer holds work back (its sender stalled). */
const OVERDUE_MS = 25;
/** The most one piece of work is held back in all, however many sends come close after one another. */
export const MAX_HOLD_MS = 60;

export interface LoopClearance {
  /**
   * Null when nothing is reserved within CLEARANCE_MS from now (start at once: no promise, no tick); else a promise
   * resolving once the nearest reservation has been released (its send is out), or has lapsed.
   */
  clear(): Promise<void> | null;
}

/**
 * Resolves once `clearance` has no reservation near (`first`: its answer just now), asking again after each send, for
 * at most MAX_HOLD_MS in all.
 */
export async function whenClear(clearance: LoopClearance, first: Promise<void> | null = clearance.clear()): Promise<void> {
  const until = performance.now() + MAX_HOLD_MS;
  for (let wait = first; wait && performance.now() < until; wait = clearance.clear()) await wait;
}

/** A held reservation: `release` once its send is out (or will not happen); `move` to a later time. */
export interface LoopReservation {
  release: () => void;
  move: (at: number) => void;
}

interface Reservation {
  at: number;
  released: Promise<void>;
  release: () => void;
}

export class LoopReservations implements LoopClearance {
  private readonly held = new Set<Reservation>();

  /**
   * Keeps the loop free from CLEARANCE_MS before `at` (performance.now()) until the returned release is called (call
   * it once the send is out, or when it will not happen). `move` gives the reservation a new time (a later slot).
   */
  reserve(at: number): LoopReservation {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const r: Reservation = { at, released, release };
    this.held.add(r);
    return {
      release: () => {
        if (this.held.delete(r)) r.release();
      },
      move: (next: number) => {
        r.at = next;
      },
    };
  }

  clear(): Promise<void> | null {
    if (!this.held.size) return null;
    const now = performance.now();
    let nearest: Reservation | null = null;
    for (const r of this.held) {
      if (r.at - now > CLEARANCE_MS || now - r.at > OVERDUE_MS) continue;
      if (!nearest || r.at < nearest.at) nearest = r;
    }
    if (!nearest) return null;
    // Released or lapsed, whichever is first: a sender that stalled past its slot does not hold requests for long.
    // A timer may fire up to a millisecond or so before its time on performance.now() (it counts from the event
    // loop's cached time), so the lapse is checked on that clock and the timer armed again for what is left: once
    // this resolves, the reservation is released or overdue, and clear() ignores it.
    const lapsed = nearest.at + OVERDUE_MS;
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout;
      const arm = () => {
        const left = lapsed - performance.now();
        if (left < 0) resolve();
        else timer = setTimeout(arm, Math.max(1, Math.ceil(left)));
      };
      arm();
      void nearest.released.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Reservations held now (for tests and stats). */
  get size(): number {
    return this.held.size;
  }
}
