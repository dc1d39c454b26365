// Worker-thread entry of an RTP sender thread (sendpool.ts): registers the TypeScript loader (tsx), then runs it.
import { register } from 'tsx/esm/api';

register();
await import('./sender.ts');
