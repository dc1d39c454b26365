// Worker-thread entry: registers the TypeScript loader (tsx) inside the worker, then runs the RHVoice worker.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
