// Whether this server can hold an agent's voice calls in the agent's languages (issue 36, item 4). A voice call (web or
// phone) needs a voice for `language.default` and a recognizer for a language the agent says its callers speak
// (`language.supported`). Recognition here is Whisper tiny.en: English only. So a German agent whose supported
// languages include `en` speaks German and hears its callers in English, as its configuration says it may; one that
// supports only `de` (or an agent in `hi`, which no voice here speaks) is refused at call start, with the reason in
// the call record and the log, and publishing it warns. Nothing is silently run in English. Chat sessions need
// neither voice nor recognition and are never refused for their language.
import { baseLanguage, type LocalVoice } from '../engine/models/voice-table.js';

/** The end reason (and error code) of a voice call refused for its agent's languages. */
export const LANGUAGE_UNSUPPORTED = 'language_unsupported';

/** The languages this server's recognizer hears (Whisper tiny.en). */
export const RECOGNIZED_LANGUAGES: readonly string[] = ['en'];

/** Why this server cannot hold a voice call of an agent with these languages, or undefined when it can. */
export function voiceCallLanguageProblem(languageDefault: string, supported: readonly string[], voices: readonly LocalVoice[]): string | undefined {
  const speaks = baseLanguage(languageDefault) ?? 'en';
  const speakable = [...new Set(voices.map((v) => v.language).filter(Boolean))].sort();
  if (!speakable.includes(speaks)) {
    return `no voice here speaks the agent's language.default "${languageDefault}" (voices speak ${speakable.join(', ')})`;
  }
  const heard = [...new Set([languageDefault, ...supported].map((l) => baseLanguage(l) ?? 'en'))];
  if (!heard.some((l) => RECOGNIZED_LANGUAGES.includes(l))) {
    return `speech recognition here is English only (Whisper tiny.en), and the agent's language.supported (${supported.join(', ') || languageDefault}) has no English: add "en" to language.supported to hear callers in English`;
  }
  return undefined;
}

/** The publish warning for an agent whose voice calls this server refuses (none when it can hold them). */
export function languageWarnings(config: Record<string, unknown>, voices: readonly LocalVoice[]): string[] {
  const language = (config.language ?? {}) as { default?: unknown; supported?: unknown };
  const languageDefault = typeof language.default === 'string' ? language.default : 'en';
  const supported = Array.isArray(language.supported) ? language.supported.filter((l): l is string => typeof l === 'string') : [languageDefault];
  const problem = voiceCallLanguageProblem(languageDefault, supported, voices);
  return problem ? [`${problem}: voice calls of this agent are refused at start with endReason ${LANGUAGE_UNSUPPORTED} (chat sessions work)`] : [];
}
