// Worker-thread entry: registers the TypeScript loader (tsx) inside the worker, then runs the PDF reader.
import { register } from 'tsx/esm/api';

register();
await import('./pdf-worker.ts');
