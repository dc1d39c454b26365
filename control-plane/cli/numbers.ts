// `npm run numbers -- add +15550100 [--provider NAME] [--country US] [--area 555] [--org ORG]`, `list [--json]`, `remove NUMBER [--force]`.
import { runCli } from './run.js';
import { parseArgs } from 'node:util';
import { openStore } from '../store/db.js';
import { addPlatformNumber, listPlatformNumbers, removePlatformNumber } from '../telephony/inventory.js';
import { loadSettings } from '../../server/settings.js';

const USAGE = `usage:
  npm run numbers -- add +15550100 [--provider NAME] [--country US] [--area 555] [--org ORG] [--json]
  npm run numbers -- list [--json]
  npm run numbers -- remove +15550100 [--force]
Numbers are the platform carrier's (PARLEY_CARRIER_*); --provider defaults to PARLEY_CARRIER_NAME. Organizations
see unassigned ones through GET /product/get-available-numbers and take them with POST /product/rent-number;
--org hands a number to an organization at once.`;

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      provider: { type: 'string' },
      country: { type: 'string' },
      area: { type: 'string' },
      org: { type: 'string' },
      force: { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  const [command, target] = positionals;
  if (!['add', 'list', 'remove'].includes(command ?? '')) {
    console.error(USAGE);
    return 2;
  }
  const settings = loadSettings();
  const store = await openStore({ dataDir: settings.dataDir, databaseUrl: settings.databaseUrl, pgSchema: settings.databaseSchema });
  try {
    if (command === 'add') {
      if (!target) throw new Error('add needs the number (E.164, such as +15550100)');
      const entry = await addPlatformNumber(store.db, {
        phoneNumber: target,
        provider: values.provider ?? settings.carrier.name,
        countryCode: values.country,
        areaCode: values.area,
        orgName: values.org,
      });
      if (values.json) console.log(JSON.stringify(entry));
      else console.log(`added ${entry.phoneNumber} (${entry.id}) provider=${entry.provider} country=${entry.countryCode} area=${entry.areaCode ?? '-'}${entry.orgName ? ` held by ${entry.orgName}` : ''}`);
      return 0;
    }
    if (command === 'list') {
      const entries = await listPlatformNumbers(store.db);
      if (values.json) console.log(JSON.stringify(entries));
      else for (const e of entries) console.log(`${e.phoneNumber}  ${e.id}  provider=${e.provider}  country=${e.countryCode}  area=${e.areaCode ?? '-'}  org=${e.orgName ?? '-'}`);
      return 0;
    }
    if (!target) throw new Error('remove needs the number');
    const removed = await removePlatformNumber(store.db, target, values.force ?? false);
    console.log(removed ? `removed ${target}` : `no such number: ${target}`);
    return removed ? 0 : 1;
  } finally {
    await store.close();
  }
}

runCli(main);
