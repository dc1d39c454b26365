// Splits text into phrases for streaming synthesis: a short first phrase (early first audio), then whole sentences.
import { endsWithAbbreviation } from '../text/abbreviations.js';

/**
 * Sentence ends: . ! ? ; : with closing quotes or brackets, once followed by white space (so "3.5" and a period
 * still being typed do not end anything), CJK full stops, or a line break.
 */
const SENTENCE_END = /[.!?;:]+["')\]]*\s+|[。！？；]+|\n+/g;
/** Where a long sentence may be cut when no sentence end comes in time. */
const SOFT_BREAK = /[,\u2014\u2013]\s+|\s+(?:and|but|or|so|because|which|that)\s+/gi;

export interface ChunkOptions {
  /** The first phrase is cut at a soft break once it is at least this long (characters), to start speaking early. */
  firstPhraseMin?: number;
  /** No phrase is longer than this; longer runs are cut at soft breaks, then at spaces. */
  maxPhrase?: number;
}

/** Splits complete text into phrases. */
export function splitPhrases(text: string, opts: ChunkOptions = {}): string[] {
  const chunker = new PhraseChunker(opts);
  return [...chunker.push(text), ...chunker.flush()];
}

/** Incremental phrase chunker for text that arrives in pieces (the TTS WebSocket's `continue` messages). */
export class PhraseChunker {
  private buffer = '';
  private emitted = 0;
  private readonly firstMin: number;
  private readonly max: number;

  constructor(opts: ChunkOptions = {}) {
    this.firstMin = opts.firstPhraseMin ?? 24;
    this.max = opts.maxPhrase ?? 240;
  }

  /** Adds text and returns the phrases that are complete. */
  push(text: string): string[] {
    this.buffer += text;
    const out: string[] = [];
    for (;;) {
      const phrase = this.nextComplete();
      if (phrase === null) break;
      if (phrase.trim()) out.push(phrase.trim());
    }
    this.emitted += out.length;
    return out;
  }

  /** Returns whatever is buffered as a final phrase (the client flushed or ended the input). */
  flush(): string[] {
    const rest = this.buffer.trim();
    this.buffer = '';
    const out = rest ? cutLong(rest, this.max) : [];
    this.emitted += out.length;
    return out;
  }

  private nextComplete(): string | null {
    const end = sentenceEnd(this.buffer);
    if (end) {
      const cut = end.index + end[0].length;
      const sentence = this.buffer.slice(0, cut);
      if (this.emitted === 0 && sentence.length > this.firstMin * 2) {
        const early = softCut(sentence, this.firstMin);
        if (early !== null) return this.take(early);
      }
      if (sentence.length > this.max) return this.take(hardCut(sentence, this.max));
      return this.take(cut);
    }
    if (this.emitted === 0 && this.buffer.length > this.firstMin * 2) {
      const early = softCut(this.buffer, this.firstMin);
      if (early !== null) return this.take(early);
    }
    if (this.buffer.length > this.max) return this.take(hardCut(this.buffer, this.max));
    return null;
  }

  private take(cut: number): string {
    const phrase = this.buffer.slice(0, cut);
    this.buffer = this.buffer.slice(cut);
    return phrase;
  }
}

/** The first sentence end that is not the period of an abbreviation. */
function sentenceEnd(text: string): RegExpExecArray | null {
  SENTENCE_END.lastIndex = 0;
  for (let m = SENTENCE_END.exec(text); m; m = SENTENCE_END.exec(text)) {
    if (m[0].startsWith('.') && !m[0].startsWith('..')) {
      const before = text.slice(0, m.index + 1);
      const after = text.slice(m.index + m[0].length);
      if (after !== '' && endsWithAbbreviation(before, after)) continue;
    }
    return m;
  }
  return null;
}

/** First soft break at or after `min` characters (and before the text's end); null when none. */
function softCut(text: string, min: number): number | null {
  SOFT_BREAK.lastIndex = 0;
  for (let m = SOFT_BREAK.exec(text); m; m = SOFT_BREAK.exec(text)) {
    const at = m[0].startsWith(',') || /^[\u2014\u2013]/.test(m[0]) ? m.index + 1 : m.index;
    if (at >= min && at < text.length - 1) return at;
  }
  return null;
}

/** Cut at the last soft break or space before `max`. */
function hardCut(text: string, max: number): number {
  const head = text.slice(0, max);
  let best = -1;
  SOFT_BREAK.lastIndex = 0;
  for (let m = SOFT_BREAK.exec(head); m; m = SOFT_BREAK.exec(head)) best = m.index + 1;
  if (best > max / 3) return best;
  const space = head.lastIndexOf(' ');
  return space > max / 3 ? space + 1 : max;
}

function cutLong(text: string, max: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const cut = hardCut(rest, max);
    out.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut);
  }
  if (rest.trim()) out.push(rest.trim());
  return out.filter(Boolean);
}
