// `redact_pii` / `redact_pci` on the recognition routes (wire: inference-api.md): 'true' or 'false', default false.
import type { RedactorOptions } from '../../engine/privacy/redact.js';

/** The redaction a request asks for, or null for none; a value other than 'true' / 'false' is refused by `reject`. */
export function redactQuery(q: URLSearchParams, reject: (message: string) => Error): RedactorOptions | null {
  const flag = (name: string): boolean => {
    const v = q.get(name);
    if (v === null || v === 'false') return false;
    if (v === 'true') return true;
    throw reject(`${name}: 'true' or 'false'`);
  };
  const options = { pii: flag('redact_pii'), pci: flag('redact_pci') };
  return options.pii || options.pci ? options : null;
}
