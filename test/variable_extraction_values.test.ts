// The values of `extract_dynamic_variables` (calls/variables-tool.ts): each checked against its declared type; any bad
// or unknown one refuses the whole call (nothing stored) with a message naming it; the standard keys are not taken.
import { describe, expect, it } from 'vitest';
import { VariableExtraction, type ExtractionRecord } from '../calls/variables-tool.js';

const tool = {
  type: 'extract_dynamic_variables',
  name: 'save',
  variablesExtractionSchema: [
    { name: 'who', type: 'text' },
    { name: 'count', type: 'number' },
    { name: 'ok', type: 'boolean' },
    { name: 'plan', type: 'enum', values: ['gold', 'silver'] },
    { name: 'call_id', type: 'text' },
  ],
};

const run = (args: unknown, records: ExtractionRecord[] = []) =>
  new VariableExtraction({ agentTools: [tool], onExtract: (r) => records.push(r) }).run({ id: 't1', name: 'save', arguments: typeof args === 'string' ? args : JSON.stringify(args) });

describe('extract_dynamic_variables values', () => {
  it('stores good values by type: numeric strings as numbers, "true" as true, an enum as declared', () => {
    const records: ExtractionRecord[] = [];
    const out = run({ who: '  Ada ', count: '42', ok: 'true', plan: 'Gold' }, records);
    expect(out.values).toEqual({ who: 'Ada', count: 42, ok: true, plan: 'gold' });
    expect(JSON.parse(out.result)).toEqual({ stored: out.values });
    expect(records).toEqual([{ tool: 'save', values: out.values, errors: [] }]);
    // null: not known yet, skipped.
    expect(run({ who: 'Bo', count: null }).values).toEqual({ who: 'Bo' });
  });

  it('refuses every bad value, naming each, and stores none', () => {
    const out = run({ who: '', count: 'lots', ok: 'yes', plan: 'bronze', extra: 1, call_id: 'x' });
    expect(out.values).toBeNull();
    const body = JSON.parse(out.result);
    expect(body.error).toBe('nothing was stored');
    expect(body.errors).toEqual([
      'who: must not be empty',
      'count: must be a number, got "lots"',
      'ok: must be true or false, got "yes"',
      'plan: must be one of "gold", "silver", got "bronze"',
      'extra: not a variable of this tool (expected who, count, ok, plan)',
      'call_id: not a variable of this tool (expected who, count, ok, plan)',
    ]);
    expect(JSON.parse(run('{not json').result).errors).toEqual(['the arguments were not valid JSON']);
    expect(JSON.parse(run({}).result).errors[0]).toMatch(/^no values given/);
    expect(JSON.parse(run({ who: { a: 1 } }).result).errors).toEqual(['who: must be text, got an object']);
  });
});
