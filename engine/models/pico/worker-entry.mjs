// Worker-thread entry: registers the TypeScript loader (tsx) inside the worker, then runs the SVOX Pico worker.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
