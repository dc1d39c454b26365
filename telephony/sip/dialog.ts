// A SIP dialog as an object (drachtio-srf's model): the UAS answer (200 with our SDP, retransmitted until the ACK,
// BYE after 64*T1 without one), in-dialog requests (BYE ends it, INFO is emitted, re-INVITE/UPDATE refresh), in-dialog
// requests of our own, and destroy() sending BYE. Emits `destroy` once, however it ends. An SDP the peer sends inside
// the dialog goes through the dialog's `checkSdp` (the media layer's rules) first: a refused offer gets its status
// (488, 400) and changes nothing; a refused answer in an ACK hangs up.
import { EventEmitter } from 'node:events';
import sip, { type RawAor, type RawMessage } from 'sip';
import { applyHeaders, DIALOG_ALLOW, SipError, type SipHeaderMap, type SipIncomingResponse, type SipRequest, type SipResponse, type SipSource } from './message.js';
import { fromWire, toWire } from './wire.js';
import type { Flow } from './transport.js';
import type { SipStack, SipTarget } from './stack.js';

export interface DialogDestroyInfo {
  by: 'remote' | 'local';
  /** `bye` (the peer hung up), `ack-timeout`, `shutdown` (the stack closed), or the reason given to destroy() (default `normal`). */
  reason: string;
}

export interface DestroyOptions {
  reason?: string;
  /** Extra headers on the BYE (e.g. Reason). */
  headers?: SipHeaderMap;
}

/**
 * What a dialog needs to be hung up by another process: kept in the store while the call is up, so that when its
 * server dies another (or the same one, restarted) can send the BYE (byeFromSnapshot). JSON as it is.
 */
export type DialogSnapshot = Omit<DialogInit, 'localSdp' | 'remoteSdp' | 'remoteSeq' | 'checkSdp'>;

/**
 * CSeq numbers a dialog's snapshot leaves for the in-dialog requests sent after it was taken (REFER, INFO, UPDATE):
 * a BYE from the snapshot is numbered above them, as RFC 3261 §12.2.1.1 asks (higher than any request before it).
 */
const SNAPSHOT_SEQ_MARGIN = 1000;

/** Judges an SDP the peer sends inside a dialog: null when it may be taken, else the final status to refuse it with and why. */
export type SdpCheck = (sdp: string) => { status: number; reason: string } | null;

export interface UasOptions {
  localSdp: string;
  /** Extra headers on the 200 OK. */
  headers?: SipHeaderMap;
  /** Checks re-INVITE and UPDATE offers (and an answer in an ACK) in this dialog; without it every SDP is taken. */
  checkSdp?: SdpCheck;
}

/** @internal */
export interface DialogInit {
  direction: 'uas' | 'uac';
  callId: string;
  localTag: string;
  remoteTag: string;
  /** Our side and the peer's, as in From/To, without tags. */
  local: RawAor;
  remote: RawAor;
  /** The peer's Contact URI (wire text): where in-dialog requests go. */
  remoteTarget: string;
  /** Route set, each `<uri>`. */
  routes: string[];
  localSdp: string;
  remoteSdp: string;
  source: SipSource;
  localSeq: number;
  remoteSeq?: number;
  checkSdp?: SdpCheck;
}

interface PendingAck {
  seq: number;
  res: SipResponse;
  /** The INVITE had no SDP: the ACK carries the answer. */
  lateOffer: boolean;
  interval: number;
  retransmit?: NodeJS.Timeout;
  giveUp: NodeJS.Timeout;
  settle?: { resolve: (d: Dialog) => void; reject: (e: Error) => void };
}

const untagged = (aor: RawAor): RawAor => {
  const { tag: _tag, ...params } = aor.params;
  return { name: aor.name, uri: aor.uri, params };
};
const tagged = (aor: RawAor, tag: string): RawAor => (tag ? { ...aor, params: { ...aor.params, tag } } : aor);
const uriText = (aor: RawAor) => fromWire(typeof aor.uri === 'string' ? aor.uri : '');

export class Dialog {
  readonly direction: 'uas' | 'uac';
  readonly callId: string;
  readonly localTag: string;
  readonly remoteTag: string;
  /** Where the first request of the dialog came from (UAS) or its 2xx arrived from (UAC). */
  readonly source: SipSource;
  localSdp: string;
  /** The peer's SDP (updated by a re-INVITE or UPDATE that carries one). */
  remoteSdp: string;
  destroyed = false;
  /** Checks the SDP of the peer's re-INVITEs and UPDATEs (and an answer in an ACK) before it is taken. */
  checkSdp?: SdpCheck;
  /** @internal UAC: the ACK of the 2xx, re-sent when the 2xx is retransmitted. */
  ack?: { raw: RawMessage; flow: Flow; seq: number };
  private readonly events = new EventEmitter();
  private readonly local: RawAor;
  private readonly remote: RawAor;
  private readonly remoteTargetWire: string;
  private readonly routes: string[];
  private localSeq: number;
  private remoteSeq?: number;
  private pending?: PendingAck;
  private bye?: Promise<void>;

  constructor(
    private readonly stack: SipStack,
    init: DialogInit,
  ) {
    this.direction = init.direction;
    this.callId = init.callId;
    this.localTag = init.localTag;
    this.remoteTag = init.remoteTag;
    this.local = untagged(init.local);
    this.remote = untagged(init.remote);
    this.remoteTargetWire = init.remoteTarget;
    this.routes = init.routes;
    this.localSdp = init.localSdp;
    this.remoteSdp = init.remoteSdp;
    this.source = init.source;
    this.localSeq = init.localSeq;
    this.remoteSeq = init.remoteSeq;
    this.checkSdp = init.checkSdp;
  }

  /** The dialog's identity and route, for a BYE sent by another process if this one dies (byeFromSnapshot). */
  snapshot(): DialogSnapshot {
    return {
      direction: this.direction,
      callId: this.callId,
      localTag: this.localTag,
      remoteTag: this.remoteTag,
      local: this.local,
      remote: this.remote,
      remoteTarget: this.remoteTargetWire,
      routes: this.routes,
      source: this.source,
      localSeq: this.localSeq,
    };
  }

  /** The peer's address of record (the caller's From URI for a UAS, the callee's To URI for a UAC). */
  get remoteUri(): string {
    return uriText(this.remote);
  }

  get localUri(): string {
    return uriText(this.local);
  }

  /** The peer's Contact URI. */
  get remoteTarget(): string {
    return fromWire(this.remoteTargetWire);
  }

  /** `destroy`: the dialog ended (once); `info`: a SIP INFO (already answered 200); `modify`: a re-INVITE or UPDATE (answered 200 with our SDP); `request`: any other in-dialog request, to answer yourself (without a listener: 405). */
  on(event: 'destroy', listener: (info: DialogDestroyInfo) => void): this;
  on(event: 'info' | 'modify', listener: (req: SipRequest) => void): this;
  on(event: 'request', listener: (req: SipRequest, res: SipResponse) => void): this;
  on(event: string, listener: (...args: any[]) => void): this {
    this.events.on(event, listener);
    return this;
  }

  once(event: 'destroy', listener: (info: DialogDestroyInfo) => void): this;
  once(event: string, listener: (...args: any[]) => void): this {
    this.events.once(event, listener);
    return this;
  }

  off(event: string, listener: (...args: any[]) => void): this {
    this.events.off(event, listener);
    return this;
  }

  /** Hangs up: sends BYE in the dialog; resolves when it is answered or timed out. Emits `destroy` (by `local`) at once. */
  destroy(opts: DestroyOptions = {}): Promise<void> {
    if (this.bye) return this.bye;
    if (this.destroyed) return Promise.resolve();
    this.end('local', opts.reason ?? 'normal');
    this.bye = new Promise<void>((resolve) => {
      try {
        this.send('BYE', { headers: opts.headers }, () => resolve());
      } catch (err) {
        this.stack.logger?.warn({ err: err instanceof Error ? err.message : String(err) }, 'sip BYE not sent');
        resolve();
      }
    });
    return this.bye;
  }

  /** Sends a request in the dialog (INFO, REFER, NOTIFY, UPDATE, MESSAGE, OPTIONS...) and resolves with its final response. */
  request(method: string, opts: { headers?: SipHeaderMap; body?: string } = {}): Promise<SipIncomingResponse> {
    if (['INVITE', 'ACK', 'CANCEL', 'BYE'].includes(method.toUpperCase())) return Promise.reject(new TypeError(`${method} is not sent with dialog.request()`));
    if (this.destroyed) return Promise.reject(new SipError(481, 'Call/Transaction Does Not Exist'));
    return new Promise((resolve, reject) => {
      try {
        this.send(method, opts, resolve);
      } catch (err) {
        reject(err);
      }
    });
  }

  /** @internal UAS: waits for the ACK of the 2xx just sent, retransmitting it over UDP (T1 doubling to T2), BYE after 64*T1. */
  awaitAck(res: SipResponse, seq: number, lateOffer: boolean, settle?: PendingAck['settle']): void {
    const { t1Ms, t2Ms } = this.stack;
    const p: PendingAck = { seq, res, lateOffer, interval: t1Ms, settle, giveUp: setTimeout(() => this.ackTimeout(), 64 * t1Ms) };
    if (this.source.transport === 'udp') {
      const tick = () => {
        res.resend();
        p.interval = Math.min(p.interval * 2, t2Ms);
        p.retransmit = setTimeout(tick, p.interval);
      };
      p.retransmit = setTimeout(tick, t1Ms);
    }
    this.pending = p;
  }

  /** @internal */
  handleAck(req: SipRequest): void {
    const p = this.pending;
    if (!p || req.headers.cseq.seq !== p.seq) return;
    this.clearPending();
    if (p.lateOffer && req.body) {
      const refusal = this.checkSdp?.(req.body);
      if (refusal) {
        // RFC 3261 13.3.1.4: an answer in the ACK we cannot take ends the session.
        this.stack.logger?.info({ callId: this.callId, reason: refusal.reason }, 'sip: the answer in an ACK was refused; hanging up');
        void this.destroy({ reason: 'bad_answer_sdp' });
        p.settle?.reject(new SipError(488, 'Not Acceptable Here'));
        return;
      }
      this.remoteSdp = req.body;
    }
    p.settle?.resolve(this);
  }

  /** @internal A request in this dialog from the peer. */
  handleRequest(req: SipRequest, res: SipResponse): void {
    const seq = req.headers.cseq.seq;
    if (this.remoteSeq !== undefined && seq <= this.remoteSeq) {
      res.send(500, 'CSeq Out of Order');
      return;
    }
    this.remoteSeq = seq;
    const sdp = { 'Content-Type': 'application/sdp' };
    switch (req.method) {
      case 'BYE':
        res.send(200);
        this.end('remote', 'bye');
        return;
      case 'INFO':
        res.send(200);
        this.events.emit('info', req);
        return;
      case 'OPTIONS':
        res.send(200, undefined, { headers: { Allow: DIALOG_ALLOW, Accept: 'application/sdp' } });
        return;
      case 'INVITE':
        if (this.pending) {
          res.send(491);
          return;
        }
        if (this.refusedOffer(req, res)) return;
        if (req.body) this.remoteSdp = req.body;
        res.send(200, undefined, { headers: sdp, body: this.localSdp });
        this.awaitAck(res, seq, !req.body);
        this.events.emit('modify', req);
        return;
      case 'UPDATE':
        if (this.refusedOffer(req, res)) return;
        if (req.body) this.remoteSdp = req.body;
        res.send(200, undefined, req.body ? { headers: sdp, body: this.localSdp } : {});
        this.events.emit('modify', req);
        return;
      default:
        if (this.events.listenerCount('request') > 0) this.events.emit('request', req, res);
        else res.send(405, undefined, { headers: { Allow: DIALOG_ALLOW } });
    }
  }

  /** A re-INVITE's or UPDATE's SDP that checkSdp refuses: answered with its status and a Warning saying why; the dialog is unchanged. */
  private refusedOffer(req: SipRequest, res: SipResponse): boolean {
    const refusal = req.body && this.checkSdp ? this.checkSdp(req.body) : null;
    if (!refusal) return false;
    res.send(refusal.status, undefined, { headers: { Warning: `399 parley "${refusal.reason.replace(/"/g, "'")}"` } });
    this.stack.logger?.info({ callId: this.callId, method: req.method, status: refusal.status, reason: refusal.reason }, 'sip: in-dialog offer refused');
    return true;
  }

  /** @internal A 2xx to our INVITE seen again (a retransmission): the ACK goes again. */
  handleStrayResponse(rs: SipIncomingResponse): void {
    if (this.ack && rs.headers.cseq.seq === this.ack.seq && rs.headers.to.tag === this.remoteTag) this.stack.sendRaw(this.ack.flow, this.ack.raw);
  }

  /** @internal The stack is closing: end without BYE. */
  shutdown(): void {
    this.end('local', 'shutdown');
  }

  private ackTimeout(): void {
    this.stack.logger?.info({ callId: this.callId }, 'sip: no ACK for our 2xx within 64*T1; hanging up');
    void this.destroy({ reason: 'ack-timeout' });
  }

  private clearPending(): void {
    const p = this.pending;
    if (!p) return;
    clearTimeout(p.retransmit);
    clearTimeout(p.giveUp);
    this.pending = undefined;
  }

  private end(by: 'remote' | 'local', reason: string): void {
    if (this.destroyed) return;
    this.destroyed = true;
    const settle = this.pending?.settle;
    this.clearPending();
    this.stack.unregisterDialog(this);
    if (settle) {
      const why =
        reason === 'ack-timeout' ? new SipError(408, 'No ACK for the 2xx') : reason === 'shutdown' ? new SipError(503, 'SIP stack closed') : new SipError(487, by === 'remote' ? 'Hung up before the ACK' : 'Ended before the ACK');
      settle.reject(why);
    }
    this.events.emit('destroy', { by, reason } satisfies DialogDestroyInfo);
  }

  private send(method: string, opts: { headers?: SipHeaderMap; body?: string }, onFinal: (rs: SipIncomingResponse) => void): void {
    const raw: RawMessage = {
      method,
      uri: this.remoteTargetWire,
      headers: {
        to: tagged(this.remote, this.remoteTag),
        from: tagged(this.local, this.localTag),
        'call-id': this.callId,
        cseq: { seq: ++this.localSeq, method },
      },
      content: opts.body ? toWire(opts.body) : '',
    };
    applyHeaders(raw, opts.headers);
    this.stack.sendRequest(raw, {
      target: this.target(),
      routes: this.routes,
      onResponse: (rs) => {
        if (rs.status >= 200) onFinal(rs);
      },
    });
  }

  /** Over TCP, the connection the dialog came on while it is open; else the route set or the peer's Contact. */
  private target(): SipTarget | undefined {
    return this.source.transport === 'tcp' && this.stack.hasConnection(this.source) ? { ...this.source } : undefined;
  }
}

/**
 * Hangs up a dialog another process held (its server stopped): a BYE from the snapshot, through this stack, with
 * `headers` (e.g. Reason). Resolves when it is answered or timed out; a dialog the peer already ended answers 481.
 */
export function byeFromSnapshot(stack: SipStack, snap: DialogSnapshot, headers?: SipHeaderMap): Promise<void> {
  const dialog = new Dialog(stack, { ...snap, localSeq: snap.localSeq + SNAPSHOT_SEQ_MARGIN, localSdp: '', remoteSdp: '' });
  return dialog.destroy({ reason: 'server_stopped', headers });
}

/** Record-Route entries as route set entries, in order. */
export function routeSet(raw: RawMessage): string[] {
  const rr = raw.headers['record-route'];
  if (!Array.isArray(rr)) return [];
  return rr.map((aor) => `<${sip.stringifyUri(aor.uri)}>`);
}

/** Answers an INVITE with 200 and our SDP (Contact at our public address, our To tag); resolves with the dialog on the ACK. */
export function createUAS(req: SipRequest, res: SipResponse, opts: UasOptions): Promise<Dialog> {
  if (req.method !== 'INVITE') return Promise.reject(new TypeError('createUAS answers an INVITE'));
  if (req.canceled || res.finalSent) return Promise.reject(new SipError(487, 'Request Terminated'));
  const raw = req.raw;
  const contact = Array.isArray(raw.headers.contact) ? raw.headers.contact[0] : undefined;
  const dialog = new Dialog(req.stack, {
    direction: 'uas',
    callId: req.headers.callId,
    localTag: res.toTag,
    remoteTag: req.headers.from.tag ?? '',
    local: raw.headers.to!,
    remote: raw.headers.from!,
    remoteTarget: typeof contact?.uri === 'string' ? contact.uri : (raw.headers.from!.uri as string),
    routes: routeSet(raw),
    localSdp: opts.localSdp,
    remoteSdp: req.body,
    source: req.source,
    localSeq: 0,
    remoteSeq: req.headers.cseq.seq,
    checkSdp: opts.checkSdp,
  });
  return new Promise<Dialog>((resolve, reject) => {
    req.stack.registerDialog(dialog);
    try {
      const headers = { 'Content-Type': 'application/sdp', Allow: DIALOG_ALLOW, ...opts.headers };
      if (!res.send(200, undefined, { headers, body: opts.localSdp })) throw new SipError(487, 'Request Terminated');
    } catch (err) {
      req.stack.unregisterDialog(dialog);
      reject(err);
      return;
    }
    dialog.awaitAck(res, req.headers.cseq.seq, !req.body, { resolve, reject });
  });
}
