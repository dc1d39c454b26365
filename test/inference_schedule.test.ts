// Scheduling inference for conversations (issue 15 point 2): waiting jobs are served by kind priority then age, an
// old job rises so none starves, a job whose signal fires while it waits never runs, synthesis and recognition share
// the slots; and in a real agent session the speculation made useless by speech resuming is dropped, not run.
import { describe, expect, it } from 'vitest';
import { INFERENCE_KINDS, InferenceQueue, isAbortError, type InferenceKind } from '../engine/models/queue.js';
import { AgentCaller, connectUrl, speech } from './support/agent-client.js';
import { serverForSuite } from './support/suite.js';
import { mediaDialects } from './support/server.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

/** A queue with one slot held by a job that runs until `release()`; `started` lists jobs in the order they began. */
function busyQueue(opts: ConstructorParameters<typeof InferenceQueue>[2], concurrency = 1) {
  const queue = new InferenceQueue(concurrency, 16, opts);
  const dropped: InferenceKind[] = [];
  queue.observer = { job: () => undefined, dropped: (kind) => dropped.push(kind) };
  const started: string[] = [];
  const hold = gate();
  const holder = queue.run(async () => {
    started.push('holder');
    await hold.opened;
  }, 'file');
  const job = (name: string, kind: InferenceKind, signal?: AbortSignal) =>
    queue.run(async () => {
      started.push(name);
      await sleep(5);
      return name;
    }, kind, { signal });
  return { queue, started, dropped, job, release: () => hold.open(), holder };
}

describe('InferenceQueue scheduling', () => {
  it('serves waiting jobs by kind: live, first phrase, synthesis, speculative, file, interim', async () => {
    const q = busyQueue({ ageStepMs: 60_000 });
    // Queued in the reverse of their priority, so arrival order alone would give the opposite.
    const order: InferenceKind[] = ['interim', 'file', 'speculative', 'synthesis', 'synthesis_first', 'live'];
    expect([...order].sort()).toEqual([...INFERENCE_KINDS].sort());
    const jobs = order.map((kind) => q.job(kind, kind));
    expect(q.queue.depth).toEqual({ running: 1, waiting: 6 });
    await sleep(20);
    q.release();
    await Promise.all([q.holder, ...jobs]);
    expect(q.started).toEqual(['holder', 'live', 'synthesis_first', 'synthesis', 'speculative', 'file', 'interim']);
  });

  it('drops a waiting job whose signal fires: it never runs, rejects at once, and the slot goes to the next', async () => {
    const q = busyQueue({});
    const abort = new AbortController();
    let ran = false;
    const doomed = q.queue.run(async () => {
      ran = true;
    }, 'speculative', { signal: abort.signal });
    const next = q.job('file', 'file');
    expect(q.queue.depth.waiting).toBe(2);
    abort.abort();
    // Rejected while the holder still runs, not when a slot frees.
    const err = await doomed.catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
    expect(q.dropped).toEqual(['speculative']);
    expect(q.queue.depth).toEqual({ running: 1, waiting: 1 });
    q.release();
    expect(await next).toBe('file');
    expect(ran).toBe(false);
    expect(q.started).toEqual(['holder', 'file']);
    // An already-aborted signal is dropped without queueing; a signal firing after the start changes nothing.
    await expect(q.queue.run(async () => 'no', 'speculative', { signal: abort.signal })).rejects.toMatchObject({ name: 'AbortError' });
    const late = new AbortController();
    const running = q.queue.run(() => sleep(30).then(() => 'done'), 'speculative', { signal: late.signal });
    late.abort();
    expect(await running).toBe('done');
    expect(q.dropped).toEqual(['speculative', 'speculative']);
    expect(q.queue.depth).toEqual({ running: 0, waiting: 0 });
  });

  it('raises a job one class per age step, so an old file job goes before a fresh live one', async () => {
    const q = busyQueue({ ageStepMs: 100 });
    const old = q.job('old file', 'file');
    // 4 classes (file -> live) take 400 ms.
    await sleep(450);
    const fresh = q.job('fresh live', 'live');
    const young = q.job('young file', 'file');
    q.release();
    await Promise.all([q.holder, old, fresh, young]);
    expect(q.started).toEqual(['holder', 'old file', 'fresh live', 'young file']);
  });

  it('gives synthesis no slots of its own: a first phrase waits behind a held recognition, and a live final goes first', async () => {
    const q = busyQueue({});
    const synth = q.job('synthesis', 'synthesis_first');
    const recog = q.job('live', 'live');
    await sleep(30);
    expect(q.started).toEqual(['holder']);
    expect(q.queue.depth).toEqual({ running: 1, waiting: 2 });
    q.release();
    await Promise.all([q.holder, synth, recog]);
    expect(q.started).toEqual(['holder', 'live', 'synthesis']);
  });
});

// A workflow agent; its words do not matter here, only the caller's turn.
const GRAPH = {
  startNodeId: 'ask',
  nodes: [{ id: 'ask', type: 'say', text: 'Thanks, noted.' }],
  edges: [],
};

const LOAD_TEXT =
  'Our opening hours are from nine in the morning until eight in the evening on weekdays. We are closed on Sundays. ' +
  'You can renew your books online or at any branch. Late returns cost ten cents a day. Ask at the desk for help.';

function droppedTotal(metrics: string, kind: InferenceKind): number {
  const m = new RegExp(`^parley_inference_dropped_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(metrics);
  return m ? Number(m[1]) : 0;
}

describe.each(mediaDialects())('speculation dropped when speech resumes (%s)', (dialect) => {
  // One slot, kept busy by synthesis (which ranks above speculative recognition), so a speculation waits.
  const suite = serverForSuite(dialect, { PARLEY_WARM_MODELS: 'true', PARLEY_INFERENCE_CONCURRENCY: '1' });

  it('drops the speculative recognition of a pause the caller talks through, and still hears the whole turn', async () => {
    const { server } = suite;
    const res = await server.request('POST', '/atoms/v1/agent', {
      body: { name: 'schedule test', workflowType: 'workflow_graph', workflowGraph: GRAPH, firstMessage: 'Hello, how can I help?' },
    });
    expect(res.status, res.text).toBe(201);
    const first = await speech(server, 'I would like to book a table');
    const second = await speech(server, 'for two people tomorrow evening.');
    // Flite's own edge silence plus 100 ms: the pause ends well inside the 500 ms a speculation waits here.
    const pause = Buffer.alloc(Math.round(0.1 * 16000) * 2);
    const scrape = async () => (await server.request('GET', '/metrics', { key: null })).text;

    const c = new AgentCaller(connectUrl(server, { token: server.key, agent_id: res.body.data as string, sample_rate: '16000' }), 16000);
    let loading = true;
    const load: Promise<void>[] = [];
    try {
      await c.opened;
      c.startMic();
      await c.agentTurn(0);
      const before = droppedTotal(await scrape(), 'speculative');
      for (let i = 0; i < 3; i++) {
        load.push(
          (async () => {
            while (loading) {
              const r = await fetch(`${server.base}/waves/v1/tts`, {
                method: 'POST',
                headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
                body: JSON.stringify({ text: LOAD_TEXT, voice_id: 'slt', output_format: 'pcm', sample_rate: 16000 }),
              });
              await r.arrayBuffer();
            }
          })(),
        );
      }
      const after = c.frames.length;
      await c.say(Buffer.concat([first, pause, second]));
      const user = await c.waitFor((f) => f.type === 'transcript' && f.role === 'user', 30_000, after);
      loading = false;
      // One turn, not two: the pause did not end it, and its speculation (still waiting) never ran.
      expect(String(user.text).toLowerCase()).toMatch(/table/);
      expect(String(user.text).toLowerCase()).toMatch(/two|tomorrow|evening/);
      expect(droppedTotal(await scrape(), 'speculative')).toBeGreaterThan(before);
    } finally {
      loading = false;
      await Promise.allSettled(load);
      c.close();
      await c.closed;
    }
  }, 90_000);
});
