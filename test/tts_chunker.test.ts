// Phrase chunking for streaming synthesis: sentence ends, an early first phrase, long-run cuts, incremental input.
import { describe, expect, it } from 'vitest';
import { PhraseChunker, splitPhrases } from '../engine/tts/chunker.js';

describe('splitPhrases', () => {
  it('splits at sentence ends and keeps numbers with decimal points whole', () => {
    expect(splitPhrases('Hello there. The total is 3.5 dollars! Shall I book it? Yes')).toEqual(['Hello there.', 'The total is 3.5 dollars!', 'Shall I book it?', 'Yes']);
  });

  it('does not end a sentence at the period of an abbreviation', () => {
    expect(splitPhrases('Your appointment with Dr. Patel is at 2:30. Your address is Apt. 4 on Elm St. Call me.')).toEqual([
      'Your appointment with Dr. Patel is at 2:30.',
      'Your address is Apt. 4 on Elm St. Call me.',
    ]);
    // "No." ends a sentence unless a number follows
    expect(splitPhrases('No. It is No. 5 on the list.')).toEqual(['No.', 'It is No. 5 on the list.']);
  });

  it('cuts a long first sentence early at a soft break so speech starts sooner', () => {
    const phrases = splitPhrases('Thank you for calling the Northside dental clinic, my name is Ava and I can help you book an appointment today.');
    expect(phrases[0]).toBe('Thank you for calling the Northside dental clinic,');
    expect(phrases.join(' ')).toBe('Thank you for calling the Northside dental clinic, my name is Ava and I can help you book an appointment today.');
  });

  it('never returns a phrase longer than maxPhrase and loses no words', () => {
    const text = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
    const phrases = splitPhrases(text, { maxPhrase: 100 });
    expect(phrases.every((p) => p.length <= 100)).toBe(true);
    expect(phrases.join(' ')).toBe(text);
  });
});

describe('PhraseChunker', () => {
  it('emits a sentence only once the text after its end arrives, and the rest on flush', () => {
    const c = new PhraseChunker();
    expect(c.push('Hello')).toEqual([]);
    expect(c.push(', I am streaming.')).toEqual([]);
    expect(c.push(' How are')).toEqual(['Hello, I am streaming.']);
    expect(c.push(' you today?')).toEqual([]);
    expect(c.flush()).toEqual(['How are you today?']);
    expect(c.flush()).toEqual([]);
  });

  it('treats line breaks and CJK full stops as sentence ends', () => {
    expect(splitPhrases('First line\nSecond line')).toEqual(['First line', 'Second line']);
    expect(splitPhrases('你好。再见')).toEqual(['你好。', '再见']);
  });
});
