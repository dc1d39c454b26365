// Picks where recordings are kept (PARLEY_RECORDING_STORE): files under the data dir, or the shared store.
import type { Db } from '../store/db.js';
import { DatabaseObjectStore } from './database-store.js';
import { FileObjectStore, type ObjectStore, type RecordingStoreKind } from './object-store.js';

/**
 * `root` is `<data dir>/recordings`: the files store writes there; the database store still reads recordings written
 * there before the switch.
 */
export function openObjectStore(kind: RecordingStoreKind, deps: { db: Db; root: string; secret: Buffer }): ObjectStore {
  return kind === 'database' ? new DatabaseObjectStore(deps.db, deps.secret, deps.root) : new FileObjectStore(deps.root, deps.secret);
}
