// The agent editor's further settings: language, turn-taking, the tools attached from the library, and "play sample"
// (a short-lived access token from the session, then the inference API's synthesis played on an AudioContext).
import { useEffect, useState } from 'preact/hooks';
import { accessToken, api, inference } from './api';
import { ErrorNote } from './ui';
// The server's own voice choice and language check (pure modules, bundled into the page): the sample speaks as a call would.
import { baseLanguage, chooseVoice, type LocalVoice } from '../../engine/models/voice-table';
import { voiceCallLanguageProblem } from '../../calls/call-language';

/** The languages the configuration takes (control-plane/agents/config-schema.ts). */
export const LANGS: [string, string][] = [
  ['en', 'English'],
  ['hi', 'Hindi'],
  ['mr', 'Marathi'],
  ['gu', 'Gujarati'],
  ['ta', 'Tamil'],
  ['es', 'Spanish'],
  ['north_indic', 'North Indic'],
  ['bn', 'Bengali'],
  ['or', 'Odia'],
  ['de', 'German'],
  ['fr', 'French'],
  ['it', 'Italian'],
];

/**
 * Built-in voices the runtime speaks with when the configured id is not one of this server's
 * (engine/models/voice-defaults.ts): RHVoice's where the server has them, else Flite's.
 */
const SAMPLE_TEXT = 'Hello! This is how I sound on a call.';

/** Fields shown here, as strings and flags of the editor's form ('' = not set). */
export interface SettingsForm {
  languageDefault: string;
  languagesSupported: string[];
  waitForUserToSpeakFirst: boolean;
  interruptionBackoffTimer: string;
  endpointingMinMs: string;
  endpointingMaxMs: string;
  vadConfidence: string;
  vadTriggerSecs: string;
  vadReleaseSecs: string;
  toolRefs: string[];
}

type Config = Record<string, unknown>;
const obj = (v: unknown): Config => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Config) : {});
const numText = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? String(v) : '');

export function settingsOf(c: Config): SettingsForm {
  const lang = obj(c.language);
  const def = typeof lang.default === 'string' ? lang.default : '';
  const ep = obj(c.endpointingConfig);
  const vad = obj(c.voiceDetectionConfig);
  return {
    languageDefault: def,
    languagesSupported: Array.isArray(lang.supported) ? (lang.supported as string[]) : def ? [def] : [],
    waitForUserToSpeakFirst: c.waitForUserToSpeakFirst === true,
    interruptionBackoffTimer: numText(c.interruptionBackoffTimer),
    endpointingMinMs: numText(ep.minDelayMs),
    endpointingMaxMs: numText(ep.maxDelayMs),
    vadConfidence: numText(vad.confidence),
    vadTriggerSecs: numText(vad.triggerTimeInSecs),
    vadReleaseSecs: numText(vad.releaseTimeInSecs),
    toolRefs: Array.isArray(c.toolRefs) ? (c.toolRefs as string[]) : [],
  };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** A number field's value; throws naming the field when it is not a number in range. */
function number(label: string, text: string, min: number, max: number, integer = false): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
    throw new Error(`${label}: must be ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}`);
  }
  return n;
}

/** The draft patch of these settings where they differ from `base`; throws on a value out of range (checked before sending). */
export function settingsPatch(form: SettingsForm, base: SettingsForm): Config {
  const p: Config = {};
  if ((form.languageDefault !== base.languageDefault || !same(form.languagesSupported, base.languagesSupported)) && form.languageDefault) {
    const supported = form.languagesSupported.includes(form.languageDefault) ? form.languagesSupported : [form.languageDefault, ...form.languagesSupported];
    if (supported.includes('ta') && supported.length > 1) throw new Error('Languages: Tamil cannot be combined with other languages');
    p.language = { default: form.languageDefault, supported };
  }
  if (form.waitForUserToSpeakFirst !== base.waitForUserToSpeakFirst) p.waitForUserToSpeakFirst = form.waitForUserToSpeakFirst;
  if (form.interruptionBackoffTimer !== base.interruptionBackoffTimer && form.interruptionBackoffTimer !== '') {
    p.interruptionBackoffTimer = number('Interruption back-off', form.interruptionBackoffTimer, 0, 10);
  }
  if ((form.endpointingMinMs !== base.endpointingMinMs || form.endpointingMaxMs !== base.endpointingMaxMs) && (form.endpointingMinMs || form.endpointingMaxMs)) {
    // The configuration takes both bounds together.
    const minDelayMs = number('End of turn, shortest wait', form.endpointingMinMs, 0, 5000, true);
    const maxDelayMs = number('End of turn, longest wait', form.endpointingMaxMs, 0, 10000, true);
    if (minDelayMs > maxDelayMs) throw new Error('End of turn: the shortest wait must not exceed the longest');
    p.endpointingConfig = { minDelayMs, maxDelayMs };
  }
  const vad: Config = {};
  if (form.vadConfidence !== base.vadConfidence && form.vadConfidence !== '') vad.confidence = number('Speech confidence', form.vadConfidence, 0, 1);
  if (form.vadTriggerSecs !== base.vadTriggerSecs && form.vadTriggerSecs !== '') vad.triggerTimeInSecs = number('Speech start after', form.vadTriggerSecs, 0, 10);
  if (form.vadReleaseSecs !== base.vadReleaseSecs && form.vadReleaseSecs !== '') vad.releaseTimeInSecs = number('Speech end after', form.vadReleaseSecs, 0, 10);
  if (Object.keys(vad).length) p.voiceDetectionConfig = vad;
  if (!same(form.toolRefs, base.toolRefs)) p.toolRefs = form.toolRefs;
  return p;
}

type Setter = <K extends keyof SettingsForm>(k: K, v: SettingsForm[K]) => void;

export function LanguageFields({ form, set }: { form: SettingsForm; set: Setter }) {
  const toggle = (code: string, on: boolean) => set('languagesSupported', on ? [...form.languagesSupported.filter((c) => c !== code), code] : form.languagesSupported.filter((c) => c !== code));
  return (
    <fieldset class="settings">
      <legend>Language</legend>
      <label>
        Default language
        <select name="languageDefault" value={form.languageDefault} onChange={(e) => {
          const v = (e.target as HTMLSelectElement).value;
          set('languageDefault', v);
          if (v && !form.languagesSupported.includes(v)) set('languagesSupported', [...form.languagesSupported, v]);
        }}>
          {!form.languageDefault && <option value="">(not set: English)</option>}
          {LANGS.map(([code, name]) => <option key={code} value={code}>{name}</option>)}
        </select>
      </label>
      <div class="checks" role="group" aria-label="Supported languages">
        {LANGS.map(([code, name]) => (
          <label class="check" key={code}>
            <input type="checkbox" checked={form.languagesSupported.includes(code) || code === form.languageDefault} disabled={code === form.languageDefault}
              onChange={(e) => toggle(code, (e.target as HTMLInputElement).checked)} /> {name}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

export function TurnFields({ form, set, allowInterruptions, setAllow }: { form: SettingsForm; set: Setter; allowInterruptions: boolean; setAllow: (v: boolean) => void }) {
  const text = (k: keyof SettingsForm) => (e: Event) => set(k, (e.target as HTMLInputElement).value as never);
  return (
    <fieldset class="settings">
      <legend>Turn-taking</legend>
      <div class="row">
        <label class="check">
          <input type="checkbox" name="allowInterruptions" checked={allowInterruptions} onChange={(e) => setAllow((e.target as HTMLInputElement).checked)} /> Callers can interrupt
        </label>
        <label class="check">
          <input type="checkbox" name="waitForUserToSpeakFirst" checked={form.waitForUserToSpeakFirst} onChange={(e) => set('waitForUserToSpeakFirst', (e.target as HTMLInputElement).checked)} /> Wait for the caller to speak first
        </label>
      </div>
      <div class="row">
        <label>
          End of turn, shortest wait (ms)
          <input name="endpointingMinMs" type="number" min="0" max="5000" step="50" placeholder="400" value={form.endpointingMinMs} onInput={text('endpointingMinMs')} />
        </label>
        <label>
          End of turn, longest wait (ms)
          <input name="endpointingMaxMs" type="number" min="0" max="10000" step="50" placeholder="3000" value={form.endpointingMaxMs} onInput={text('endpointingMaxMs')} />
        </label>
        <label>
          Interruption back-off (s)
          <input name="interruptionBackoffTimer" type="number" min="0" max="10" step="0.1" placeholder="0" value={form.interruptionBackoffTimer} onInput={text('interruptionBackoffTimer')} />
        </label>
      </div>
      <div class="row">
        <label>
          Speech confidence (0-1)
          <input name="vadConfidence" type="number" min="0" max="1" step="0.05" placeholder="0.5" value={form.vadConfidence} onInput={text('vadConfidence')} />
        </label>
        <label>
          Speech start after (s)
          <input name="vadTriggerSecs" type="number" min="0" max="10" step="0.05" placeholder="0.25" value={form.vadTriggerSecs} onInput={text('vadTriggerSecs')} />
        </label>
        <label>
          Speech end after (s)
          <input name="vadReleaseSecs" type="number" min="0" max="10" step="0.05" placeholder="0.8" value={form.vadReleaseSecs} onInput={text('vadReleaseSecs')} />
        </label>
      </div>
      <p class="hint">Empty fields keep the server's defaults (shown greyed).</p>
    </fieldset>
  );
}

interface LibraryTool {
  toolId: string;
  type: string;
  definition: { name: string; description?: string; enabled?: boolean };
}

/** The agent's `toolRefs`: attach from the tool library, detach; saved with the draft. */
export function ToolRefsField({ refs, set }: { refs: string[]; set: (refs: string[]) => void }) {
  const [library, setLibrary] = useState<LibraryTool[] | null>(null);
  const [pick, setPick] = useState('');
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<{ tools: LibraryTool[] }>('GET', '/tool').then((r) => setLibrary(r.tools), setError);
  }, []);
  const byId = new Map((library ?? []).map((t) => [t.toolId, t]));
  const free = (library ?? []).filter((t) => !refs.includes(t.toolId));
  return (
    <fieldset class="settings">
      <legend>Tools</legend>
      <ErrorNote error={error} />
      {refs.length === 0 ? <p class="empty">No library tools attached.</p> : (
        <ul class="plain" aria-label="Attached tools">
          {refs.map((id) => {
            const t = byId.get(id);
            return (
              <li key={id}>
                <b>{t ? t.definition.name : id}</b> {t ? <span class="tag">{t.type.replace('_', ' ')}</span> : library ? <span class="tag warn">not in the library</span> : null}
                {t && t.definition.enabled === false && <span class="tag warn">disabled</span>}
                <button type="button" class="link" onClick={() => set(refs.filter((r) => r !== id))}>Detach</button>
              </li>
            );
          })}
        </ul>
      )}
      <div class="row">
        <select aria-label="Library tool" value={pick} onChange={(e) => setPick((e.target as HTMLSelectElement).value)}>
          <option value="">{library === null ? 'Loading…' : free.length ? 'Choose a tool' : 'No other tools in the library'}</option>
          {free.map((t) => <option key={t.toolId} value={t.toolId}>{t.definition.name} ({t.type.replace('_', ' ')})</option>)}
        </select>
        <button type="button" disabled={!pick} onClick={() => (set([...refs, pick]), setPick(''))}>Attach</button>
        <a href="#/tools">Tool library</a>
      </div>
    </fieldset>
  );
}

interface Voice {
  voiceId: string;
  displayName?: string;
  tags?: { locale?: string; gender?: string; accent?: string };
}

/**
 * "Play sample": the inference API does not take the session cookie, so the page mints a 60 s access token from
 * its session and synthesises with it. The AudioContext is made in the click, so it may play when the audio arrives.
 */
export function PlaySample({ voiceId, gender, speed, text, language, supported, onVoices }: { voiceId: string; gender: string; speed: string; text: string; language: string; supported: string[]; onVoices: (v: Voice[]) => void }) {
  const [state, setState] = useState<string>('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const play = async () => {
    setBusy(true);
    setError(null);
    const ctx = new AudioContext();
    try {
      setState('Fetching the sample…');
      const token = await accessToken();
      const voices = ((await (await inference('GET', '/voice/get-all-models', token)).json()) as { voices: Voice[] }).voices;
      onVoices(voices);
      // As a call of the agent chooses: its voice if it speaks the agent's language, else the nearest that does; an id
      // this server lacks speaks as its gender. A call the server would refuse for its languages is said so.
      const local: LocalVoice[] = voices.map((v) => ({ voiceId: v.voiceId, gender: v.tags?.gender ?? '', accent: v.tags?.accent ?? '', language: baseLanguage(v.tags?.locale) ?? '' }));
      const lang = language || 'en';
      const choice = chooseVoice(local, { voiceId: voiceId || undefined, gender, language: lang, mode: 'agent' });
      const voice = 'voiceId' in choice ? choice.voiceId : 'slt';
      const refused = voiceCallLanguageProblem(lang, supported.length ? supported : [lang], local);
      // The configuration's speed 1.2 is the voice's natural rate (as the runtime maps it).
      const s = Number(speed);
      const rate = speed.trim() && Number.isFinite(s) ? Math.min(2, Math.max(0.5, s / 1.2)) : 1;
      // The first message, unless it is empty or has {{variables}} only a call fills.
      const say = text.trim() && !text.includes('{{') ? text.trim().slice(0, 300) : SAMPLE_TEXT;
      const res = await inference('POST', '/tts', token, { text: say, voice_id: voice, output_format: 'wav', sample_rate: 24000, speed: rate });
      const audio = await ctx.decodeAudioData(await res.arrayBuffer());
      const node = ctx.createBufferSource();
      node.buffer = audio;
      node.connect(ctx.destination);
      const why = local.some((v) => v.voiceId === voiceId) ? `“${voiceId}” does not speak “${lang}”` : `“${voiceId || 'none'}” is not a voice of this server`;
      const note = `${audio.duration.toFixed(1)} s, voice ${voice}${voice !== voiceId ? ` (${why})` : ''}${refused ? `; voice calls of this agent are refused here: ${refused}` : ''}`;
      node.onended = () => {
        setState(`Sample played (${note})`);
        setBusy(false);
        void ctx.close();
      };
      await ctx.resume();
      node.start();
      setState(`Playing the sample (${note})…`);
    } catch (err) {
      setError(err);
      setState('');
      setBusy(false);
      void ctx.close();
    }
  };
  return (
    <div class="sample">
      <button type="button" onClick={() => void play()} disabled={busy}>Play sample</button>
      {state && <span class="sub" role="status" aria-label="Voice sample">{state}</span>}
      <ErrorNote error={error} />
    </div>
  );
}
