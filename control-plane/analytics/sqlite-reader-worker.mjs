// Worker-thread entry of the SQLite analytics readers (sqlite-readers.ts): one read-only connection to the store's
// file, running the compiled queries it is sent, so an aggregate over many calls never holds the server's main thread.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('query_only = ON');
// A larger page cache than the default 2 MB: the analytics index of 100,000 calls is about 15 MB.
db.pragma(`cache_size = -${workerData.cacheKb}`);
const statements = new Map();

parentPort.on('message', ({ id, sql, parameters }) => {
  try {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      if (statements.size >= 200) statements.delete(statements.keys().next().value);
      statements.set(sql, statement);
    }
    parentPort.postMessage({ id, rows: statement.all(...parameters) });
  } catch (err) {
    parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
