// A call's media leg as the phone call sees it: caller audio and digits in, agent audio and digits out. The server's
// legs are RtpSessions run by the media worker thread (remote.ts); tests may give fakes.
import type { RtpSessionStats, RtpStartParams } from './session.js';

export interface MediaLeg {
  /** Caller audio: 8 kHz frames of 20 ms, as soon as they are in sequence (or concealed). */
  onAudio: ((frame: Int16Array) => void) | null;
  onDtmf: ((digit: string) => void) | null;
  /** Media errors; when the leg itself is gone (`isClosed`), the call has no audio any more. */
  onError: ((err: Error) => void) | null;
  /** No caller RTP for the start params' mediaTimeoutMs while the peer was meant to be sending (called once). */
  onMediaTimeout: (() => void) | null;
  /** The bound RTP port, for the SDP. */
  readonly localPort: number;
  readonly isClosed: boolean;
  /** Starts media with what the SDP negotiation agreed. */
  start(params: RtpStartParams): Promise<void>;
  /** Queues 8 kHz agent audio of any length. */
  send(pcm: Int16Array): void;
  /** Whether the agent's turn is still producing audio (silence sent then counts as an underrun). */
  set speaking(on: boolean);
  /** Whether the peer's latest SDP is `sendrecv` (false while the call is on hold): the media timeout runs only then. */
  set peerSending(on: boolean);
  /** Holds queued agent audio unsent (a barge-in being confirmed; packets built ahead are dropped), or plays it on. */
  hold(on: boolean): void;
  /** Drops queued agent audio (barge-in). */
  clear(): void;
  /** Agent audio queued and not yet sent, in milliseconds. */
  queuedMs(): number;
  /** Queues RFC 4733 digits; throws on a non-digit or when the peer did not negotiate telephone-event. */
  sendDtmf(digits: string): void;
  /** Closes the leg (socket, port, clock) and gives its final counters; safe to call twice. */
  finish(): Promise<RtpSessionStats>;
}

/** Where a call's media legs come from. */
export interface MediaLegs {
  /** Binds a leg on a free RTP port at `localAddress`. */
  bind(localAddress: string): Promise<MediaLeg>;
  /** Stops whatever the legs run on (the worker thread); legs still open are closed. */
  close(): Promise<void>;
}
