// The dependency rule of the house (ARCHITECTURE.md "Layers"): engine <- calls <- transports and telephony <- server,
// with control-plane (the store and the domain) beside calls. A layer imports its own files and the layers below it;
// nothing imports server/ but the programs that start things (server/ itself and the operator CLIs).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export type Layer = 'engine' | 'control-plane' | 'calls' | 'transports' | 'telephony' | 'server' | 'cli';

/** Which layers each layer may import besides itself. */
export const ALLOWED: Record<Layer, readonly Layer[]> = {
  engine: [],
  'control-plane': ['engine'],
  calls: ['control-plane', 'engine'],
  transports: ['calls', 'control-plane', 'engine'],
  telephony: ['calls', 'control-plane', 'engine'],
  server: ['transports', 'telephony', 'calls', 'control-plane', 'engine'],
  // The operator CLIs are programs, as the server is: they read the server's settings.
  cli: ['server', 'control-plane', 'engine'],
};

/** The layer of a path relative to the repository root, or null for files outside the layers (bench, test, console). */
export function layerOf(rel: string): Layer | null {
  const [top, second] = rel.split('/');
  if (top === 'control-plane' && second === 'cli') return 'cli';
  return top === 'engine' || top === 'control-plane' || top === 'calls' || top === 'transports' || top === 'telephony' || top === 'server' ? top : null;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** Each relative import of `source` (a file at `rel`) that crosses into a layer `rel`'s layer may not use. */
export function violations(rel: string, source: string): string[] {
  const from = layerOf(rel);
  if (!from) return [];
  const out: string[] = [];
  for (const m of source.matchAll(IMPORT)) {
    const spec = (m[1] ?? m[2]) as string;
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec));
    const to = layerOf(target);
    if (to && to !== from && !ALLOWED[from].includes(to)) out.push(`${rel} (${from}) imports ${target} (${to})`);
  }
  return out;
}

/** Every violation in the layers' TypeScript files under `root`. */
export function scan(root: string): { files: number; violations: string[] } {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const p = path.join(dir, name);
      return statSync(p).isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
    });
  const files = ['engine', 'control-plane', 'calls', 'transports', 'telephony', 'server'].flatMap((d) => walk(path.join(root, d)));
  return { files: files.length, violations: files.flatMap((f) => violations(path.relative(root, f).split(path.sep).join('/'), readFileSync(f, 'utf8'))) };
}
