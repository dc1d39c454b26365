// The agent WebSocket URL a client should connect to, as seen from the request (test calls' `host`).
import type { HttpRequest } from '../http/types.js';

/** A Host header value: a name, IPv4 or bracketed IPv6 address, with an optional port. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** `ws://<Host>/<prefix>/agent/connect`; `wss` behind a proxy that says `x-forwarded-proto: https`. */
export function agentSocketUrl(req: HttpRequest, prefix: string): string {
  const proto = (req.headers['x-forwarded-proto'] ?? '').split(',')[0]?.trim().toLowerCase();
  const host = req.headers.host && HOST.test(req.headers.host) ? req.headers.host : 'localhost';
  return `${proto === 'https' ? 'wss' : 'ws'}://${host}${prefix}/agent/connect`;
}
