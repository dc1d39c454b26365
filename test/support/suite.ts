// Per-suite server: a real server on a fresh store for the enclosing describe block, stopped and dropped afterwards.
import { afterAll, beforeAll } from 'vitest';
import { freshStore, startServer, type Dialect, type StoreEnv, type TestServer } from './server.js';

export interface SuiteServer {
  readonly server: TestServer;
  readonly store: StoreEnv;
}

export function serverForSuite(dialect: Dialect, env: Record<string, string> = {}): SuiteServer {
  let store: StoreEnv | undefined;
  let server: TestServer | undefined;
  beforeAll(async () => {
    store = freshStore(dialect);
    server = await startServer({ store, env });
  });
  afterAll(async () => {
    await server?.stop();
    await store?.cleanup();
  });
  return {
    get server() {
      if (!server) throw new Error('server not started yet');
      return server;
    },
    get store() {
      if (!store) throw new Error('store not created yet');
      return store;
    },
  };
}
