// The real models behind the turn-taking ports (engine/ports.ts): a Silero VAD stream of its own, and Whisper through
// the inference queue with the live recognition options (greedy, the encoder window the registry picks).
import type { SpeechRecognizer, TurnModels } from '../ports.js';
import type { ModelRegistry } from './registry.js';
import type { WhisperPool } from './whisper/pool.js';

function queuedRecognizer(registry: ModelRegistry, whisper: WhisperPool): SpeechRecognizer {
  return {
    async transcribe(samples, kind, signal) {
      let runMs = 0;
      const { text } = await registry.queue.run(async (slot) => {
        const t = performance.now();
        try {
          return await whisper.transcribe(samples, registry.liveTranscribeOptions(slot, samples.length));
        } finally {
          runMs = performance.now() - t;
        }
      }, kind, { signal });
      return { text, runMs };
    },
  };
}

/** Loads (or reuses) the registry's VAD and recognizer: a new VAD stream, the shared Whisper workers. */
export async function loadTurnModels(registry: ModelRegistry): Promise<TurnModels> {
  const [vad, whisper] = await Promise.all([registry.vad(), registry.recognizer()]);
  return { vad: vad.createStream(), recognizer: queuedRecognizer(registry, whisper) };
}

/** The registry's models as an agent session takes them: its turn models, loaded when asked for, and its voices. */
export function registryModels(registry: ModelRegistry): { turn(): Promise<TurnModels>; synthesizer: ModelRegistry } {
  return { turn: () => loadTurnModels(registry), synthesizer: registry };
}
