// The address SIP puts in Contact and SDP when none is configured: the bind address, or the first external IPv4.
import os from 'node:os';

export function defaultPublicAddress(host: string): string {
  if (host !== '0.0.0.0' && host !== '::' && host !== '') return host;
  for (const list of Object.values(os.networkInterfaces())) {
    for (const ni of list ?? []) if (ni.family === 'IPv4' && !ni.internal) return ni.address;
  }
  return '127.0.0.1';
}
