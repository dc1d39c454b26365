// The message types a protocol document lists: the first cells (`type`) of the table that starts at `firstRow`.
import { readFileSync } from 'node:fs';

export function documentedTypes(doc: URL, firstRow: string): string[] {
  const text = readFileSync(doc, 'utf8');
  const section = text.slice(text.indexOf(`| \`${firstRow}\``));
  const table = section.slice(0, section.indexOf('\n\n'));
  return [...table.matchAll(/^\| `([a-z_.]+)` \|/gm)].map((m) => m[1] as string);
}
