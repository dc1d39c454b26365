// docs/settings.md, generated from the settings schema: `npm run docs:settings` writes it; test/settings_schema.test.ts
// fails when the file differs from what the schema generates.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GROUPS, HARNESS, REMOVED, SETTINGS, type Group } from './settings-schema.js';

export const SETTINGS_DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../docs/settings.md');

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const row = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;

/** The whole of docs/settings.md. */
export function settingsMarkdown(): string {
  const out: string[] = [
    '# Settings',
    '',
    '<!-- Generated from server/settings-schema.ts by `npm run docs:settings`; edit the schema, not this file. -->',
    '',
    'Every setting is an environment variable, read once at start-up; an empty value counts as unset. The server refuses',
    'to start, naming the variable, when a value is not allowed, when a `PARLEY_*` variable is not a setting (it names',
    'the nearest one), and when a removed setting is set (it says what happens now).',
    '',
    `Most deployments set only these: ${SETTINGS.filter((s) => s.essential).map((s) => `\`${s.name}\``).join(', ')}.`,
  ];
  for (const [group, title] of Object.entries(GROUPS) as [Group, string][]) {
    const rows = SETTINGS.filter((s) => s.group === group);
    if (!rows.length) continue;
    out.push('', `## ${title}`, '', row(['Variable', 'Default', 'Allowed', 'Meaning']), row(['---', '---', '---', '---']));
    for (const s of rows) out.push(row([`\`${s.name}\``, s.shownDefault, s.allowed, s.doc]));
  }
  out.push('', '## Removed', '', 'Set, these refuse start-up.', '', row(['Variable', 'What happens now']), row(['---', '---']));
  for (const [name, now] of Object.entries(REMOVED)) out.push(row([`\`${name}\``, `${now[0]?.toUpperCase()}${now.slice(1)}.`]));
  out.push('', '## Read by the tests and benches', '', 'The server ignores these.', '', row(['Variable', 'Meaning']), row(['---', '---']));
  for (const [name, doc] of Object.entries(HARNESS)) out.push(row([`\`${name}\``, doc]));
  return `${out.join('\n')}\n`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(SETTINGS_DOC, settingsMarkdown());
  console.log(`wrote ${path.relative(process.cwd(), SETTINGS_DOC)} (${SETTINGS.length} settings)`);
}
