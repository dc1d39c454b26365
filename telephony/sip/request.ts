// Out-of-dialog requests we send (OPTIONS, MESSAGE, REFER...: not INVITE, which createUAC sends): one digest retry on
// 401/407, provisional responses to a callback, the final response as the result.
import type { RawMessage } from 'sip';
import { applyHeaders, parseSipUri, randomTag, type SipHeaderMap, type SipIncomingResponse } from './message.js';
import { authorize, type DigestClientCredentials } from './digest.js';
import { toWire } from './wire.js';
import type { SipStack, SipTarget } from './stack.js';

export interface SipRequestOptions {
  method: string;
  headers?: SipHeaderMap;
  body?: string;
  /** From: a URI, or a user part put at our public address (default `parley`). */
  from?: string;
  /** To: a URI (default the request URI). */
  to?: string;
  target?: SipTarget;
  /** Answer one 401/407 challenge with these credentials. */
  auth?: DigestClientCredentials;
  onProvisional?: (res: SipIncomingResponse) => void;
}

const METHOD = /^[A-Za-z][A-Za-z0-9._!%*+`'~-]{0,31}$/;

export function sendOutOfDialog(stack: SipStack, uri: string, opts: SipRequestOptions): Promise<SipIncomingResponse> {
  const method = opts.method;
  if (!METHOD.test(method)) return Promise.reject(new TypeError(`invalid SIP method "${method}"`));
  if (['INVITE', 'ACK', 'CANCEL'].includes(method)) return Promise.reject(new TypeError(`${method} is sent by createUAC, not request()`));
  const target = parseSipUri(uri);
  if (!target || target.scheme === 'tel') return Promise.reject(new TypeError(`"${uri}" is not a sip: URI`));
  const callId = stack.newCallId();
  const fromTag = randomTag();
  const build = (seq: number, auth?: { name: string; value: string }): RawMessage => {
    const raw: RawMessage = {
      method,
      uri: toWire(uri),
      headers: {
        to: { uri: toWire(opts.to ?? uri), params: {} },
        from: { uri: toWire(stack.localUri(opts.from)), params: { tag: fromTag } },
        'call-id': callId,
        cseq: { seq, method },
      },
      content: opts.body ? toWire(opts.body) : '',
    };
    applyHeaders(raw, { ...opts.headers, ...(auth ? { [auth.name]: auth.value } : {}) });
    return raw;
  };
  let first: RawMessage;
  try {
    first = build(1);
  } catch (err) {
    return Promise.reject(err);
  }
  return new Promise((resolve) => {
    let retried = false;
    const send = (raw: RawMessage) =>
      stack.sendRequest(raw, {
        target: opts.target,
        contact: true,
        onResponse: (rs) => {
          if (rs.status < 200) return opts.onProvisional?.(rs);
          if ((rs.status === 401 || rs.status === 407) && opts.auth && !retried && rs.source) {
            const auth = authorize(rs, { method, uri }, opts.auth);
            if (auth) {
              retried = true;
              return send(build(2, auth));
            }
          }
          resolve(rs);
        },
      });
    send(first);
  });
}
