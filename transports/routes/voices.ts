// Voice listing: GET /{model}/get_voices and GET /voice/get-all-models (our voices, listed under their real models).
import type { HttpServer } from '../http/server.js';
import { docs } from '../http/types.js';
import { inferenceError } from '../http/auth.js';
import type { ModelRegistry, VoiceEntry } from '../../engine/models/registry.js';
import { isTtsModel } from './tts-request.js';
import { ttsErrorBody } from './inference-errors.js';

/** The hosted shape's tags, plus our `locale` (`de-DE`): what the voice table (docs/models.md) chooses by. */
const tags = (v: VoiceEntry) => ({ language: v.language, locale: v.locale, accent: v.accent, gender: v.gender, age: '', emotions: [], usecases: ['conversational'] });

export function voiceRoutes(server: HttpServer, prefix: string, registry: ModelRegistry): void {
  const options = { auth: 'inference' as const, maxBodyBytes: 0, errorBody: ttsErrorBody };
  const d = docs('Speech synthesis');
  /** The registry lists the default voice first; it alone carries `isDefault: true`. */
  const mark = (v: VoiceEntry) => (v.voiceId === registry.defaultVoiceId ? { isDefault: true } : {});
  server.route('GET', `${prefix}/voice/get-all-models`, () => ({
    status: 200,
    body: {
      voices: registry.voices().map((v) => ({
        _id: v.voiceId,
        voiceId: v.voiceId,
        displayName: v.displayName,
        description: v.description,
        model: v.model,
        sampleRate: v.sampleRate,
        audioPreview: null,
        tags: tags(v),
        ...mark(v),
      })),
      models: registry.models(),
    },
  }), { ...options, doc: d('Every voice and model', { response: { description: '`{voices, models}`.', schema: { type: 'object', properties: { voices: { type: 'array', items: { type: 'object' } }, models: { type: 'array' } } } } }) });
  server.route('GET', `${prefix}/:model/get_voices`, (req) => {
    const model = req.params.model as string;
    if (!isTtsModel(model, registry)) throw inferenceError(400, `Unknown model "${model}"`);
    // Our own ids list their own voices; the aliases existing clients use list every built-in voice.
    const voices = registry.voices().filter((v) => (['flite', 'rhvoice', 'pico', 'piper'].includes(model) ? v.model === model : true));
    return { status: 200, body: { voices: voices.map((v) => ({ voiceId: v.voiceId, displayName: v.displayName, tags: tags(v), ...mark(v) })) } };
  }, { ...options, doc: d("A model's voices", { response: { description: '`{voices}`.', schema: { type: 'object', properties: { voices: { type: 'array', items: { type: 'object' } } } } }, errors: [400] }) });
}
