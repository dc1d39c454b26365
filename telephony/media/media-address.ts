// Where an SDP may aim our RTP: never a link-local (169.254/16, fe80::/10), cloud metadata (169.254.169.254,
// fd00:ec2::254, ...), multicast, broadcast or reserved address, nor an unspecified one other than the hold address
// (0.0.0.0 or ::, RFC 3264 §8.4: "send nothing here", which we never send to). Loopback and private addresses are
// allowed (tests, private carriers). The classification is the egress policy's (engine/net/egress.ts).
import { isIPv4, isIPv6 } from 'node:net';
import { classifyAddress, type AddressKind } from '../../engine/net/egress.js';

/** The kinds refused, as a 488's Warning names them. */
const REFUSED: Partial<Record<AddressKind, string>> = {
  'link-local': 'a link-local address',
  metadata: 'a cloud metadata address',
  'non-unicast': 'a multicast, broadcast or reserved address',
  unspecified: 'an unspecified address (only 0.0.0.0 or :: alone, for hold)',
};

/** The hold address in its canonical form (`0.0.0.0`, `::`) when `address` is one (any spelling of ::), else null. */
export function holdAddress(address: string): '0.0.0.0' | '::' | null {
  if (isIPv4(address)) return address === '0.0.0.0' ? '0.0.0.0' : null;
  return isIPv6(address) && /^[0:]+$/.test(address) ? '::' : null;
}

/**
 * Why our RTP may not go to `address` (text naming the address and its kind), or null when it may. The hold address
 * passes (what the media leg does with it: send nothing); text that is no IP address is refused.
 */
export function refusedMediaAddress(address: string): string | null {
  if (holdAddress(address)) return null;
  const what = REFUSED[classifyAddress(address) ?? 'non-unicast'];
  return what ? `${address} is ${what}` : null;
}
