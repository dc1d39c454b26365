// Which agents' voice calls this server can hold (calls/call-language.ts): a voice for language.default, and English
// (the only recognition here) among the languages the agent's callers may speak. Pure logic, no server.
import { describe, expect, it } from 'vitest';
import { languageWarnings, voiceCallLanguageProblem } from '../calls/call-language.js';
import type { LocalVoice } from '../engine/models/voice-table.js';

const voice = (voiceId: string, language: string): LocalVoice => ({ voiceId, gender: 'female', accent: 'american', language });
const withPico = [voice('slt', 'en'), voice('pico-de-DE', 'de'), voice('pico-es-ES', 'es')];
const englishOnly = [voice('slt', 'en'), voice('piper-x', '')];

describe('voice calls by the agent language', () => {
  it('English agents, and agents that speak a voiced language and accept English callers, are held', () => {
    expect(voiceCallLanguageProblem('en', ['en'], englishOnly)).toBeUndefined();
    expect(voiceCallLanguageProblem('en-US', [], englishOnly)).toBeUndefined();
    expect(voiceCallLanguageProblem('de', ['de', 'en'], withPico)).toBeUndefined();
    expect(voiceCallLanguageProblem('es', ['es', 'en-GB'], withPico)).toBeUndefined();
  });

  it('an agent whose default no voice speaks is refused, whatever it supports', () => {
    expect(voiceCallLanguageProblem('hi', ['hi', 'en'], withPico)).toBe('no voice here speaks the agent\'s language.default "hi" (voices speak de, en, es)');
    expect(voiceCallLanguageProblem('de', ['de', 'en'], englishOnly)).toContain('(voices speak en)');
  });

  it('an agent whose callers cannot be heard (no English among its languages) is refused', () => {
    expect(voiceCallLanguageProblem('de', ['de'], withPico)).toContain('speech recognition here is English only');
    expect(voiceCallLanguageProblem('es', ['es', 'de'], withPico)).toContain('(es, de) has no English');
  });

  it('publish warns once, naming the end reason; nothing for an agent without a language block', () => {
    expect(languageWarnings({ language: { default: 'de', supported: ['de'] } }, withPico)).toEqual([expect.stringMatching(/English only.*refused at start with endReason language_unsupported \(chat sessions work\)$/)]);
    expect(languageWarnings({}, englishOnly)).toEqual([]);
    expect(languageWarnings({ language: { default: 'de' } }, withPico)).toHaveLength(1);
  });
});
