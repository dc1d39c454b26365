// Knowledge-base chunking and query terms (no store): chunks of about the target size, cut on paragraph and sentence
// boundaries, each starting with the end of the one before; queries reduced to their searchable words.
import { describe, expect, it } from 'vitest';
import { chunkText, normalizeText } from '../control-plane/knowledge/chunking.js';
import { queryTerms } from '../control-plane/knowledge/search.js';

const sentence = (i: number) => `Sentence number ${i} tells about topic ${i % 7} in a few plain words.`;

describe('knowledge-base chunking', () => {
  it('keeps a short text whole and normalizes spaces and blank lines', () => {
    expect(chunkText('  Hello   there.\r\n\r\n\r\n\r\nSecond  paragraph. ')).toEqual(['Hello there.\n\nSecond paragraph.']);
    expect(chunkText(' \n \n')).toEqual([]);
    expect(normalizeText('a\t b \n  c')).toBe('a b\nc');
  });

  it('cuts long text near the target size on sentence ends, with about the overlap repeated', () => {
    const text = Array.from({ length: 120 }, (_, i) => sentence(i)).join(' ');
    const chunks = chunkText(text, { size: 800, overlap: 100 });
    expect(chunks.length).toBeGreaterThan(8);
    for (const c of chunks.slice(0, -1)) {
      expect(c.length).toBeLessThanOrEqual(800);
      expect(c.length).toBeGreaterThan(400);
      expect(c).toMatch(/\.$/); // ends on a sentence end
      expect(c).toMatch(/^Sentence number \d+/); // starts on a sentence start
    }
    for (let i = 1; i < chunks.length; i++) {
      // The first sentence of a chunk is the last of the one before (the overlap).
      const first = chunks[i]!.match(/^Sentence number \d+ [^.]*\./)![0];
      expect(chunks[i - 1]!.endsWith(first)).toBe(true);
      expect(first.length).toBeLessThanOrEqual(100);
    }
    // Every sentence is in some chunk.
    for (let i = 0; i < 120; i++) expect(chunks.some((c) => c.includes(sentence(i)))).toBe(true);
  });

  it('prefers paragraph breaks over sentence ends', () => {
    const para = (p: number) => Array.from({ length: 4 }, (_, i) => sentence(p * 10 + i)).join(' ');
    const text = Array.from({ length: 8 }, (_, p) => para(p)).join('\n\n');
    const chunks = chunkText(text, { size: 800, overlap: 100 });
    // Each chunk but the last ends where a paragraph ends.
    for (const c of chunks.slice(0, -1)) expect(text.includes(`${c.slice(-40)}\n\n`)).toBe(true);
  });

  it('cuts text without boundaries at the size, on words where it can', () => {
    const words = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    const chunks = chunkText(words, { size: 300, overlap: 50 });
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(300);
    for (const c of chunks) expect(c).toMatch(/^word\d+/);
    const blob = 'x'.repeat(1000);
    const pieces = chunkText(blob, { size: 300, overlap: 0 });
    expect(pieces.join('')).toBe(blob);
  });
});

describe('knowledge-base query terms', () => {
  it('keeps the searchable words once, lower-case, without stop words', () => {
    expect(queryTerms('What are your opening HOURS on Saturday? Opening!')).toEqual(['opening', 'hours', 'saturday']);
    expect(queryTerms('the a of')).toEqual([]);
    expect(queryTerms('"x" OR y* -z NEAR(')).toEqual(['x', 'y', 'z', 'near']);
  });
});
