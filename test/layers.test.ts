// The dependency rule (test/support/layers.ts, ARCHITECTURE.md): checked over the whole source tree on every run.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { layerOf, scan, violations } from './support/layers.js';

const ROOT_DIR = path.resolve(import.meta.dirname, '..');

describe('layers', () => {
  it('no file imports a layer above its own, and nothing but the programs imports server/', () => {
    const { files, violations: found } = scan(ROOT_DIR);
    expect(files).toBeGreaterThan(200);
    expect(found).toEqual([]);
  });

  it('names the crossings it finds: a layer reaching up, a sibling, server/ from below; type imports count too', () => {
    expect(violations('engine/agent/x.ts', "import { a } from '../../calls/runtime.js';")).toEqual(['engine/agent/x.ts (engine) imports calls/runtime.js (calls)']);
    expect(violations('telephony/inbound.ts', "import type { T } from '../transports/http/loop-reservations.js';")).toHaveLength(1);
    expect(violations('transports/routes/outbound.ts', "import type { D } from '../../telephony/outbound/dialer.js';")).toHaveLength(1);
    expect(violations('control-plane/telephony/outbound.ts', "export type { CarrierSettings } from '../../server/settings.js';")).toHaveLength(1);
    expect(violations('calls/live-calls.ts', "const m = await import('../telephony/sip/dialog.js');")).toHaveLength(1);
    // Allowed: downwards, within a layer, the CLIs reading the server's settings, and files outside the layers.
    expect(violations('telephony/inbound.ts', "import { a } from '../calls/runtime.js';\nimport { b } from './sip/stack.js';")).toEqual([]);
    expect(violations('control-plane/cli/keys.ts', "import { loadSettings } from '../../server/settings.js';")).toEqual([]);
    expect(violations('test/x.test.ts', "import { startApp } from '../server/app.js';")).toEqual([]);
    expect(layerOf('calls/runtime.ts')).toBe('calls');
    expect(layerOf('bench/telephony.ts')).toBeNull();
  });
});
