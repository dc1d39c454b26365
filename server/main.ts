// Entry point: start on embedded defaults, drain and exit 0 on SIGTERM/SIGINT.
import { loadSettings } from './settings.js';
import { startApp } from './app.js';

const app = await startApp(loadSettings());
let stopping = false;
const shutdown = (signal: string) => {
  if (stopping) return;
  stopping = true;
  app.logger.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
  app
    .stop()
    .then(() => {
      app.logger.info('stopped');
      process.exit(0);
    })
    .catch((err: unknown) => {
      app.logger.error({ err: String(err) }, 'shutdown failed');
      process.exit(1);
    });
};
// A stray rejection in one session must not end every other call: log it loudly and keep serving.
process.on('unhandledRejection', (reason: unknown) => {
  app.logger.error({ err: reason instanceof Error ? { message: reason.message, stack: reason.stack } : String(reason) }, 'unhandled promise rejection');
});
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
