// `npm run keys -- create --name NAME [--org ORG] [--rate-limit N] [--json]`, `list [--json]`, `delete ID_OR_NAME`.
import { runCli } from './run.js';
import { parseArgs } from 'node:util';
import { openStore } from '../store/db.js';
import { createKey, deleteKey, listKeys } from '../auth/keys.js';
import { loadSettings } from '../../server/settings.js';

const USAGE = `usage:
  npm run keys -- create --name NAME [--org ORG] [--rate-limit PER_MINUTE] [--json]
  npm run keys -- list [--json]
  npm run keys -- delete ID_OR_NAME`;

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { name: { type: 'string' }, org: { type: 'string' }, 'rate-limit': { type: 'string' }, json: { type: 'boolean' } },
  });
  const [command, target] = positionals;
  const settings = loadSettings();
  const store = await openStore({ dataDir: settings.dataDir, databaseUrl: settings.databaseUrl, pgSchema: settings.databaseSchema });
  try {
    if (command === 'create') {
      if (!values.name) throw new Error('--name is required');
      const rate = values['rate-limit'] !== undefined ? Number(values['rate-limit']) : null;
      if (rate !== null && (!Number.isInteger(rate) || rate < 1)) throw new Error('--rate-limit must be a positive integer (requests per minute)');
      const { key, record } = await createKey(store.db, { name: values.name, orgName: values.org, rateLimitPerMin: rate });
      if (values.json) console.log(JSON.stringify({ key, ...record }));
      else console.log(`${key}\n\nKey "${record.name}" (${record.id}) created for organization ${record.orgId}. It is shown only now: store it safely.`);
      return 0;
    }
    if (command === 'list') {
      const keys = await listKeys(store.db);
      if (values.json) console.log(JSON.stringify(keys));
      else for (const k of keys) console.log(`${k.id}  ${k.prefix}  ${k.name}  org=${k.orgName}  requests=${k.requestCount}  lastUsed=${k.lastUsedAt ?? '-'}`);
      return 0;
    }
    if (command === 'delete') {
      if (!target) throw new Error('delete needs the key id or name');
      const n = await deleteKey(store.db, target);
      console.log(n ? `deleted ${n} key(s)` : 'no such key');
      return n ? 0 : 1;
    }
    console.error(USAGE);
    return 2;
  } finally {
    await store.close();
  }
}

runCli(main);
