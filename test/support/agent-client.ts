// A scripted caller for the agent WebSocket: a microphone that streams speech or silence at real-time pace, and a log
// of every server frame with its arrival time.
import WebSocket from 'ws';
import type { TestServer } from './server.js';
import { sleep } from './server.js';

export interface Frame {
  type: string;
  at: number;
  [field: string]: any;
}

/** Synthesises `text` with a built-in voice through the server's own TTS route: 16-bit PCM at `rate`. */
export async function speech(server: TestServer, text: string, rate = 16000, voice = 'kal16'): Promise<Buffer> {
  const res = await fetch(`${server.base}/waves/v1/tts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text, voice_id: voice, output_format: 'pcm', sample_rate: rate }),
  });
  if (res.status !== 200) throw new Error(`tts failed: ${res.status} ${await res.text()}`);
  return Buffer.from(await res.arrayBuffer());
}

export class AgentCaller {
  readonly frames: Frame[] = [];
  readonly ws: WebSocket;
  /**
   * When the last queued speech ends at real-time pace: the send time of its final chunk plus the speech in that chunk
   * (chunks leave at the start of their slot). 0 before any speech.
   */
  lastSpeechEndAt = 0;
  closeCode: number | null = null;
  closeReason = '';
  private queue: Buffer[] = [];
  private mic: NodeJS.Timeout | null = null;
  private readonly chunkBytes: number;
  readonly opened: Promise<void>;
  readonly closed: Promise<void>;

  constructor(url: string, readonly rate: number, headers: Record<string, string> = {}, readonly chunkMs = 40) {
    this.chunkBytes = Math.round((rate * chunkMs) / 1000) * 2;
    this.ws = new WebSocket(url, { headers });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      this.ws.once('error', reject);
    });
    this.closed = new Promise((resolve) => {
      this.ws.once('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        this.stopMic();
        resolve();
      });
    });
    this.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as Frame;
      frame.at = performance.now();
      this.frames.push(frame);
    });
  }

  /** Starts the microphone: every chunkMs one chunk of queued speech, or silence. */
  startMic(): void {
    if (this.mic) return;
    const started = performance.now();
    let sent = 0;
    const tick = () => {
      // Catch up on timer drift so the stream stays at real-time pace.
      const due = Math.floor((performance.now() - started) / this.chunkMs) + 1;
      while (sent < due && this.ws.readyState === WebSocket.OPEN) {
        this.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: this.nextChunk().toString('base64') }));
        sent++;
      }
      this.mic = setTimeout(tick, this.chunkMs);
    };
    tick();
  }

  stopMic(): void {
    if (this.mic) clearTimeout(this.mic);
    this.mic = null;
  }

  /** Queues speech (16-bit PCM at the session rate); resolves when it has all been sent. */
  async say(pcm: Buffer): Promise<void> {
    this.queue.push(pcm);
    while (this.queue.length) await sleep(10);
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  of(type: string, pred: (f: Frame) => boolean = () => true): Frame[] {
    return this.frames.filter((f) => f.type === type && pred(f));
  }

  async waitFor(pred: (f: Frame) => boolean, timeoutMs = 20_000, after = 0): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.frames.slice(after).find(pred);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`timed out; frames: ${this.summary()}`);
      if (this.closeCode !== null && this.frames.slice(after).every((f) => !pred(f))) {
        await sleep(50);
        const late = this.frames.slice(after).find(pred);
        if (late) return late;
        throw new Error(`socket closed (${this.closeCode} ${this.closeReason}); frames: ${this.summary()}`);
      }
      await sleep(20);
    }
  }

  /**
   * Resolves with the first frame at index >= `after` matching `pred`, event-driven (no polling: for benches with
   * many callers). Rejects on timeout or when the socket closes first, naming `what`.
   */
  nextFrame(pred: (f: Frame) => boolean, after: number, timeoutMs: number, what: string): Promise<Frame> {
    return new Promise((resolve, reject) => {
      let i = after;
      const scan = () => {
        for (; i < this.frames.length; i++) if (pred(this.frames[i] as Frame)) return this.frames[i] as Frame;
        return null;
      };
      const hit = scan();
      if (hit) return resolve(hit);
      const fail = (why: string) => new Error(`${what}: ${why}; last frames: ${this.summary().slice(-400)}`);
      if (this.closeCode !== null) return reject(fail(`socket closed (${this.closeCode} ${this.closeReason})`));
      const done = () => {
        clearTimeout(timer);
        this.ws.off('message', onMsg);
        this.ws.off('close', onClose);
      };
      // The constructor's listener was added first, so the frame is already in this.frames here.
      const onMsg = () => {
        const f = scan();
        if (f) {
          done();
          resolve(f);
        }
      };
      const onClose = () =>
        setImmediate(() => {
          const f = scan();
          done();
          if (f) resolve(f);
          else reject(fail(`socket closed (${this.closeCode} ${this.closeReason})`));
        });
      const timer = setTimeout(() => {
        done();
        reject(fail(`timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.ws.on('message', onMsg);
      this.ws.once('close', onClose);
    });
  }

  /** Waits for the agent's next complete turn (its final assistant transcript) after frame index `after`. */
  async agentTurn(after = this.frames.length, timeoutMs = 30_000): Promise<Frame> {
    return this.waitFor((f) => f.type === 'transcript' && f.role === 'assistant', timeoutMs, after);
  }

  /** Decoded output audio (16-bit PCM) of frames in [from, to). */
  audioBetween(from = 0, to = this.frames.length): Buffer {
    return Buffer.concat(this.frames.slice(from, to).filter((f) => f.type === 'output_audio.delta').map((f) => Buffer.from(f.audio as string, 'base64')));
  }

  summary(): string {
    return this.frames
      .filter((f) => f.type !== 'output_audio.delta')
      .map((f) => `${f.type}${f.role ? `(${f.role})` : ''}${f.text ? `:${JSON.stringify(f.text)}` : ''}${f.reason ? `:${f.reason}` : ''}${f.code ? `:${f.code}` : ''}`)
      .join(' | ');
  }

  close(): void {
    this.stopMic();
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000);
  }

  private nextChunk(): Buffer {
    const head = this.queue[0];
    if (!head) return Buffer.alloc(this.chunkBytes);
    if (head.length <= this.chunkBytes) {
      this.queue.shift();
      if (!this.queue.length) this.lastSpeechEndAt = performance.now() + (head.length / 2 / this.rate) * 1000;
      return head.length === this.chunkBytes ? head : Buffer.concat([head, Buffer.alloc(this.chunkBytes - head.length)]);
    }
    this.queue[0] = head.subarray(this.chunkBytes);
    return head.subarray(0, this.chunkBytes);
  }
}

/** ws:// URL of the agent WebSocket with query parameters. */
export function connectUrl(server: TestServer, query: Record<string, string>): string {
  return `ws://127.0.0.1:${server.port}/atoms/v1/agent/connect?${new URLSearchParams(query).toString()}`;
}

/** `GET /conversation/{callId}` once the call has ended (its record is written just after the socket closes). */
export async function endedCall(server: TestServer, callId: string): Promise<any> {
  for (let i = 0; i < 100; i++) {
    const res = await server.request('GET', `/atoms/v1/conversation/${callId}`);
    if (res.status === 200 && res.body.data.status !== 'in_progress') return res.body.data;
    await sleep(100);
  }
  throw new Error(`conversation ${callId} did not end`);
}

/**
 * Creates the agent `body` describes, calls it on the agent WebSocket at `rate` Hz, lets it say its first message and
 * hangs up: the greeting's audio and the ended call's record.
 */
export async function agentGreeting(server: TestServer, body: Record<string, unknown>, rate: number): Promise<{ audio: Buffer; call: any }> {
  const created = await server.request('POST', '/atoms/v1/agent', { body });
  if (created.status !== 201) throw new Error(`agent not created: ${created.status} ${created.text}`);
  const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: created.body.data as string, sample_rate: String(rate) }), rate);
  await c.opened;
  const session = await c.waitFor((f) => f.type === 'session.created');
  c.startMic();
  await c.agentTurn(0);
  const audio = c.audioBetween();
  c.close();
  await c.closed;
  return { audio, call: await endedCall(server, session.call_id as string) };
}
