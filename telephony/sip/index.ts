// The SIP signalling leg's public API: the stack (middleware per method), dialogs, digest, and the message types.
export { SipStack, type SipStackOptions, type SipHandler, type SipNext, type SipTarget } from './stack.js';
export { Dialog, byeFromSnapshot, createUAS, type DialogDestroyInfo, type DialogSnapshot, type DestroyOptions, type UasOptions } from './dialog.js';
export { createUAC, type UacOptions } from './uac.js';
export type { SipRequestOptions } from './request.js';
export { challenge, verify, authorize, NONCE_TTL_MS, type DigestCredentials, type DigestClientCredentials, type DigestVerdict } from './digest.js';
export {
  SipRequest,
  SipResponse,
  SipIncomingResponse,
  SipError,
  DIALOG_ALLOW,
  parseSipUri,
  reasonPhrase,
  type SipSource,
  type SipUri,
  type SipNameAddr,
  type SipVia,
  type SipHeaders,
  type SipHeaderMap,
  type SendOptions,
  type SipTransportName,
} from './message.js';
export { defaultPublicAddress } from './address.js';
