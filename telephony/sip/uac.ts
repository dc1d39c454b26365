// Placing a call (UAC): INVITE with our SDP, provisional responses, one digest retry on 401/407, ACK of the 2xx (again
// for each retransmitted 2xx) and the dialog; an AbortSignal cancels (CANCEL goes once a provisional response shows
// the INVITE arrived; a 2xx that crosses it is ACKed and hung up).
import type { RawAor, RawMessage } from 'sip';
import { applyHeaders, DIALOG_ALLOW, parseSipUri, randomTag, SipError, type SipHeaderMap, type SipIncomingResponse } from './message.js';
import { authorize, type DigestClientCredentials } from './digest.js';
import { Dialog, routeSet, type SdpCheck } from './dialog.js';
import { toWire } from './wire.js';
import type { Flow } from './transport.js';
import type { SipStack, SipTarget } from './stack.js';

export interface UacOptions {
  localSdp: string;
  /** Extra headers on the INVITE (e.g. P-Asserted-Identity, a trunk's headers). */
  headers?: SipHeaderMap;
  /** Answer one 401/407 challenge with these credentials. */
  auth?: DigestClientCredentials;
  /** From: a URI, or a user part (the caller ID) at our public address. */
  from?: string;
  /** To: a URI (default the request URI). */
  to?: string;
  /** Send to this address instead of resolving the request URI (a carrier's proxy). */
  target?: SipTarget;
  /** Aborting cancels the call: the promise rejects with SipError 487 at once. */
  signal?: AbortSignal;
  /** Each provisional response (100, 180, 183...). */
  onProvisional?: (res: SipIncomingResponse) => void;
  /**
   * The first INVITE has left (its send completed; not its digest retry): a pacer counts its next slot from this
   * moment. The INVITE leaves after a resolved promise and a socket write, and on a machine short of CPU both lagged:
   * counted from createUAC()'s return, the next slot came up to 23 ms early (two servers, cps 5, loaded machine).
   */
  onSent?: () => void;
  /** Checks re-INVITE and UPDATE offers in the dialog (see UasOptions.checkSdp). */
  checkSdp?: SdpCheck;
}

export function createUAC(stack: SipStack, uri: string, opts: UacOptions): Promise<Dialog> {
  const ruri = parseSipUri(uri);
  if (!ruri || ruri.scheme === 'tel') return Promise.reject(new TypeError(`"${uri}" is not a sip: URI`));
  if (opts.signal?.aborted) return Promise.reject(new SipError(487, 'Request Terminated'));
  const callId = stack.newCallId();
  const localTag = randomTag();
  const local: RawAor = { uri: toWire(stack.localUri(opts.from)), params: { tag: localTag } };
  const to: RawAor = { uri: toWire(opts.to ?? uri), params: {} };
  let seq = 0;
  const build = (auth?: { name: string; value: string }): RawMessage => {
    seq++;
    const raw: RawMessage = {
      method: 'INVITE',
      uri: toWire(uri),
      headers: { to, from: local, 'call-id': callId, cseq: { seq, method: 'INVITE' } },
      content: toWire(opts.localSdp),
    };
    applyHeaders(raw, { 'Content-Type': 'application/sdp', Allow: DIALOG_ALLOW, ...opts.headers, ...(auth ? { [auth.name]: auth.value } : {}) });
    return raw;
  };

  return new Promise<Dialog>((resolve, reject) => {
    let settled = false;
    let dialog: Dialog | undefined;
    let invite: RawMessage | undefined;
    let inviteFlow: Flow | undefined;
    let provisional = false;
    let cancelWanted = false;
    let cancelSent = false;
    let authTried = false;

    const settle = (err: Error | null, d?: Dialog) => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve(d!);
    };

    const sendCancel = () => {
      if (cancelSent || !invite || !inviteFlow) return;
      cancelSent = true;
      const h = invite.headers;
      const cancel: RawMessage = {
        method: 'CANCEL',
        uri: invite.uri,
        headers: { via: h.via, to: h.to, from: h.from, 'call-id': callId, cseq: { seq: h.cseq!.seq, method: 'CANCEL' } },
        content: '',
      };
      if (h.route) cancel.headers.route = h.route;
      stack.sendRequest(cancel, { target: { ...inviteFlow }, onResponse: () => undefined });
    };

    function onAbort() {
      cancelWanted = true;
      if (provisional) sendCancel();
      settle(new SipError(487, 'Request Terminated'));
    }

    const onSuccess = (rs: SipIncomingResponse) => {
      if (dialog) return dialog.handleStrayResponse(rs);
      const contact = Array.isArray(rs.raw.headers.contact) ? rs.raw.headers.contact[0] : undefined;
      const source = rs.source ?? { ...inviteFlow! };
      const d = new Dialog(stack, {
        direction: 'uac',
        callId,
        localTag,
        remoteTag: rs.headers.to.tag ?? '',
        local,
        remote: rs.raw.headers.to!,
        remoteTarget: typeof contact?.uri === 'string' ? contact.uri : toWire(uri),
        routes: routeSet(rs.raw).reverse(),
        localSdp: opts.localSdp,
        remoteSdp: rs.body,
        source,
        localSeq: seq,
        checkSdp: opts.checkSdp,
      });
      dialog = d;
      const ackSeq = seq;
      const ack: RawMessage = {
        method: 'ACK',
        uri: typeof contact?.uri === 'string' ? contact.uri : toWire(uri),
        headers: { to: rs.raw.headers.to, from: local, 'call-id': callId, cseq: { seq: ackSeq, method: 'ACK' } },
        content: '',
      };
      const viaConnection = source.transport === 'tcp' && stack.hasConnection(source);
      stack.sendRequest(ack, {
        target: viaConnection ? { ...source } : !contact ? opts.target : undefined,
        routes: routeSet(rs.raw).reverse(),
        onFlow: (flow) => (d.ack = { raw: ack, flow, seq: ackSeq }),
        onResponse: () => undefined,
      });
      stack.registerDialog(d);
      if (settled) void d.destroy({ reason: 'canceled' });
      else settle(null, d);
    };

    const onResponse = (rs: SipIncomingResponse) => {
      if (rs.status < 200) {
        provisional = true;
        if (cancelWanted) sendCancel();
        else opts.onProvisional?.(rs);
        return;
      }
      if (rs.status < 300) return onSuccess(rs);
      if ((rs.status === 401 || rs.status === 407) && opts.auth && !authTried && !cancelWanted && rs.source) {
        const auth = authorize(rs, { method: 'INVITE', uri }, opts.auth);
        if (auth) {
          authTried = true;
          provisional = false;
          return send(build(auth));
        }
      }
      settle(new SipError(rs.status, rs.reason, rs));
    };

    const send = (raw: RawMessage) => {
      const first = !invite;
      invite = raw;
      stack.sendRequest(raw, { target: opts.target, contact: true, onFlow: (f) => (inviteFlow = f), onSent: first ? opts.onSent : undefined, onResponse });
    };

    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      send(build());
    } catch (err) {
      settle(err as Error);
    }
  });
}
