// What an agent's words are said as: the entries of its `pronunciationDicts` (dictionary ids resolved in the store,
// inline entries as written) and `speechFormatting`, handed to the engine as plain data (engine/tts/speech-text.ts).
import type { Db } from '../control-plane/store/db.js';
import { agentPronunciations } from '../control-plane/pronunciation/dicts.js';
import type { SpeechTextRules } from '../engine/tts/speech-text.js';

export async function agentSpeechText(db: Db, orgId: string, config: Record<string, unknown>): Promise<SpeechTextRules | undefined> {
  const pronunciations = await agentPronunciations(db, orgId, config.pronunciationDicts);
  const formatting = config.speechFormatting === true;
  return pronunciations.length || formatting ? { pronunciations, formatting } : undefined;
}
