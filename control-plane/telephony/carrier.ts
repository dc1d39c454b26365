// The operator's platform carrier (PARLEY_CARRIER_*: parsed by server/settings.ts), as the telephony domain, the dialer
// and the campaigns read it: the layers below server/ take this type from here, not from the server's settings.
import type { Transport } from './validation.js';

export interface CarrierSettings {
  /** Provider name shown on platform numbers (and the numbers CLI's default `--provider`). */
  name: string;
  /** `host[:port]` the platform dials out through; undefined: not configured. */
  address?: string;
  transport: Transport;
  /** Outbound calls per second towards the carrier. */
  cps: number;
  /** IPs/CIDRs the carrier sends calls from; empty: any. */
  allowedAddresses: string[];
  /** Digest credentials, both ways, when set. */
  username?: string;
  password?: string;
}
