// Talk to an agent from the browser: a test call's `wct_` token (never the key) opens the agent WebSocket; the
// microphone streams at the session rate through an AudioWorklet, the agent's audio is scheduled back to back on the
// same AudioContext and dropped on `interruption` (barge-in), the transcript shows both sides as they come, and each
// turn's latency (the caller's end of speech, as the page hears it, to the first agent audio played) is drawn as it
// happens. Chat mode sends typed text instead.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ATOMS } from './api';
import { ErrorNote } from './ui';

interface Line {
  role: 'user' | 'assistant' | 'event';
  text: string;
  final: boolean;
}
interface TestCall {
  callId: string;
  token: string;
}
/** A 20 ms block at or above this RMS (about -45 dBFS) counts as speech for the latency mark. */
const SPEECH_RMS = 0.0056;
/** The rate of a session opened with a token (docs/agent-session-ws.md). */
const RATE = 24000;

function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}
function pcm16(block: Float32Array): Uint8Array {
  const out = new Int16Array(block.length);
  for (let i = 0; i < block.length; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round((block[i] as number) * 32767)));
  return new Uint8Array(out.buffer);
}
function fromPcm16(b64: string): Float32Array<ArrayBuffer> {
  const bin = atob(b64);
  const out = new Float32Array(bin.length >> 1);
  for (let i = 0; i < out.length; i++) {
    const v = bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8);
    out[i] = (v >= 0x8000 ? v - 0x10000 : v) / 32768;
  }
  return out;
}

/** Everything of one live call that is not page state. */
class Call {
  ws: WebSocket;
  ctx: AudioContext | null = null;
  stream: MediaStream | null = null;
  playing: AudioBufferSourceNode[] = [];
  playhead = 0;
  lastSpeechAt = 0;
  awaitingFirstAudio = false;
  constructor(url: string, readonly onMessage: (m: Record<string, unknown>) => void, readonly onClose: (why: string) => void) {
    this.ws = new WebSocket(url);
    this.ws.onmessage = (e) => this.onMessage(JSON.parse(String(e.data)) as Record<string, unknown>);
    this.ws.onclose = (e) => {
      this.stop();
      this.onClose(e.reason || `closed (${e.code})`);
    };
  }
  async startMic(echoCancellation: boolean): Promise<void> {
    this.ctx = new AudioContext({ sampleRate: RATE });
    await this.ctx.audioWorklet.addModule('/console/mic-worklet.js');
    this.stream = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation, noiseSuppression: false, autoGainControl: false, channelCount: 1 } });
    const source = this.ctx.createMediaStreamSource(this.stream);
    const tap = new AudioWorkletNode(this.ctx, 'mic-tap');
    tap.port.onmessage = (e: MessageEvent<Float32Array>) => {
      const block = e.data;
      let sum = 0;
      for (let i = 0; i < block.length; i++) sum += (block[i] as number) ** 2;
      if (Math.sqrt(sum / block.length) >= SPEECH_RMS) this.lastSpeechAt = performance.now();
      if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: toBase64(pcm16(block)) }));
    };
    source.connect(tap);
    // A node nothing pulls is not run: the tap's output (silence: it writes none) goes to the speakers.
    tap.connect(this.ctx.destination);
  }
  /** Schedules one frame right after the previous; returns when it starts playing (performance.now() time). */
  play(b64: string): number {
    const ctx = this.ctx;
    if (!ctx) return performance.now();
    const samples = fromPcm16(b64);
    const buffer = ctx.createBuffer(1, samples.length, RATE);
    buffer.copyToChannel(samples, 0);
    const node = ctx.createBufferSource();
    node.buffer = buffer;
    node.connect(ctx.destination);
    const at = Math.max(ctx.currentTime + 0.02, this.playhead);
    node.start(at);
    this.playhead = at + buffer.duration;
    this.playing.push(node);
    node.onended = () => (this.playing = this.playing.filter((n) => n !== node));
    return performance.now() + (at - ctx.currentTime) * 1000;
  }
  /** Barge-in: drop what is queued and not yet played. */
  flush(): void {
    for (const n of this.playing) n.stop();
    this.playing = [];
    this.playhead = 0;
  }
  send(m: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
  }
  stop(): void {
    this.stream?.getTracks().forEach((t) => t.stop());
    void this.ctx?.close().catch(() => undefined);
    this.stream = null;
  }
}

export function TalkPanel({ agentId, branchId, hasDraft }: { agentId: string; branchId: string; hasDraft: boolean }) {
  const [mode, setMode] = useState<'webcall' | 'chat'>('webcall');
  const [useDraft, setUseDraft] = useState(hasDraft);
  const [echo, setEcho] = useState(true);
  const [state, setState] = useState<'idle' | 'connecting' | 'live' | 'ended'>('idle');
  const [lines, setLines] = useState<Line[]>([]);
  const [latencies, setLatencies] = useState<number[]>([]);
  const [playedMs, setPlayedMs] = useState(0);
  const [callId, setCallId] = useState<string | null>(null);
  const [text, setText] = useState('');
  const [error, setError] = useState<unknown>(null);
  const call = useRef<Call | null>(null);
  useEffect(() => () => call.current?.ws.close(), []);

  const onMessage = (m: Record<string, unknown>) => {
    const c = call.current;
    switch (m.type) {
      case 'session.created':
        setCallId(String(m.call_id));
        setState('live');
        break;
      case 'transcript.delta':
      case 'transcript': {
        const role = m.role === 'user' ? 'user' : 'assistant';
        const final = m.type === 'transcript';
        setLines((ls) => {
          const last = ls[ls.length - 1];
          const line = { role, text: String(m.text ?? ''), final } as Line;
          return last && last.role === role && !last.final ? [...ls.slice(0, -1), line] : [...ls, line];
        });
        if (role === 'user' && final && c) c.awaitingFirstAudio = true;
        break;
      }
      case 'output_audio.delta':
        if (c) {
          const audio = String(m.audio);
          const startsAt = c.play(audio);
          setPlayedMs((x) => x + ((audio.length * 3) / 4 / 2 / RATE) * 1000);
          if (c.awaitingFirstAudio && c.lastSpeechAt) {
            c.awaitingFirstAudio = false;
            setLatencies((xs) => [...xs, Math.round(startsAt - c.lastSpeechAt)]);
          }
        }
        break;
      case 'interruption':
        c?.flush();
        setLines((ls) => [...ls, { role: 'event', text: 'interrupted', final: true }]);
        break;
      case 'error':
        setLines((ls) => [...ls, { role: 'event', text: `error ${String(m.code)}: ${String(m.message ?? '')}`, final: true }]);
        break;
      case 'session.closed':
        setLines((ls) => [...ls, { role: 'event', text: `call ended (${String(m.reason)})`, final: true }]);
        break;
    }
  };

  const start = async () => {
    setError(null);
    setLines([]);
    setLatencies([]);
    setPlayedMs(0);
    setState('connecting');
    try {
      const t = await api<TestCall>('POST', `/agent/${encodeURIComponent(agentId)}/branches/${encodeURIComponent(branchId)}/test-call`, { includeDraft: useDraft, mode });
      const proto = location.protocol === 'https:' ? 'wss' : 'ws';
      const c = new Call(`${proto}://${location.host}${ATOMS}/agent/connect?token=${encodeURIComponent(t.token)}`, onMessage, () => setState('ended'));
      call.current = c;
      if (mode === 'webcall') await c.startMic(echo);
    } catch (err) {
      setError(err);
      call.current?.ws.close();
      setState('ended');
    }
  };
  const hangUp = () => call.current?.send({ type: 'session.close' });
  const say = (e: Event) => {
    e.preventDefault();
    if (!text.trim()) return;
    call.current?.send({ type: 'input_text.send', text: text.trim() });
    if (mode === 'chat') setLines((ls) => [...ls, { role: 'user', text: text.trim(), final: true }]);
    setText('');
  };
  const live = state === 'live' || state === 'connecting';

  return (
    <div class="card talk" aria-label="Talk to the agent">
      <h2>Talk to the agent</h2>
      <div class="row">
        <label class="check">
          <input type="radio" name="talkmode" checked={mode === 'webcall'} disabled={live} onChange={() => setMode('webcall')} /> Voice
        </label>
        <label class="check">
          <input type="radio" name="talkmode" checked={mode === 'chat'} disabled={live} onChange={() => setMode('chat')} /> Chat
        </label>
        <label class="check">
          <input type="checkbox" checked={useDraft} disabled={live || !hasDraft} onChange={(e) => setUseDraft((e.target as HTMLInputElement).checked)} /> Use the draft
        </label>
        {mode === 'webcall' && (
          <label class="check">
            <input type="checkbox" checked={echo} disabled={live} onChange={(e) => setEcho((e.target as HTMLInputElement).checked)} /> Echo cancellation
          </label>
        )}
        {live ? <button type="button" onClick={hangUp}>Hang up</button> : <button type="button" onClick={() => void start()}>{mode === 'chat' ? 'Start chat' : 'Talk'}</button>}
        <span class="sub" role="status">{state === 'connecting' ? 'Connecting…' : state === 'live' ? 'Live' : state === 'ended' ? 'Ended' : ''}</span>
        {mode === 'webcall' && playedMs > 0 && <span class="sub" aria-label="Agent audio played">agent audio {(playedMs / 1000).toFixed(1)} s</span>}
        {callId && state === 'ended' && <a href={`#/calls/${encodeURIComponent(callId)}`}>Open the call</a>}
      </div>
      <ErrorNote error={error} />
      {(live || lines.length > 0) && (
        <form class="row" onSubmit={say}>
          <input aria-label="Message" placeholder={mode === 'chat' ? 'Type a message' : 'Or type instead of speaking'} value={text} disabled={state !== 'live'} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
          <button type="submit" disabled={state !== 'live'}>Send</button>
        </form>
      )}
      <ol class="transcript" aria-label="Transcript">
        {lines.map((l, i) => (
          <li key={i} class={`${l.role}${l.final ? '' : ' partial'}`}>
            {l.role === 'event' ? <em>{l.text}</em> : (
              <>
                <b>{l.role === 'user' ? 'You' : 'Agent'}:</b> {l.text}
              </>
            )}
          </li>
        ))}
      </ol>
      {mode === 'webcall' && latencies.length > 0 && <LatencyChart values={latencies} label="End of your speech to the agent's first audio (ms), per turn" />}
    </div>
  );
}

/** Bars, one per turn, in plain SVG. */
export function LatencyChart({ values, label }: { values: number[]; label: string }) {
  const max = Math.max(1000, ...values);
  const w = 28;
  const h = 120;
  return (
    <figure class="latency">
      <figcaption>{label}</figcaption>
      <svg role="img" aria-label={label} width={Math.max(values.length * w + 40, 120)} height={h + 20}>
        {values.map((v, i) => {
          const bh = Math.max(1, (v / max) * h);
          return (
            <g key={i}>
              <rect class="bar" x={40 + i * w} y={h - bh} width={w - 6} height={bh} />
              <text x={40 + i * w + (w - 6) / 2} y={h + 14} text-anchor="middle">{v}</text>
            </g>
          );
        })}
        <text x="0" y="10">{max}</text>
        <text x="0" y={h}>0</text>
      </svg>
    </figure>
  );
}
