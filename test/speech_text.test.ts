// What synthesis says (engine/tts/speech-text.ts, speech-format.ts): pronunciation-dictionary words replaced whole and
// in any case, in one pass, and speechFormatting's numbers, dates, times and amounts written as words.
import { describe, expect, it } from 'vitest';
import { speakingAs, speechTransform } from '../engine/tts/speech-text.js';
import { formatForSpeech, numberWords, ordinalWords, spellCurrency, yearWords } from '../engine/tts/speech-format.js';
import { rhvoiceText } from '../engine/models/rhvoice/index.js';
import type { Synthesizer } from '../engine/ports.js';

describe('pronunciation entries', () => {
  const say = speechTransform({ pronunciations: [{ word: 'MySQL', pronunciation: 'my-sequel' }, { word: 'cat', pronunciation: 'elephant' }, { word: 'C++', pronunciation: 'see plus plus' }, { word: 'New York', pronunciation: 'the big apple' }] });

  it('replaces whole words in any case, never inside a longer word', () => {
    expect(say('We run mysql and MYSQL; the Cat sat on a category of cats.')).toBe('We run my sequel and my sequel; the elephant sat on a category of cats.');
    expect(say('C++ and C#, cat-like, cat.')).toBe('see plus plus and C#, elephant-like, elephant.');
    expect(say('Flights to new york and New Yorkers.')).toBe('Flights to the big apple and New Yorkers.');
  });

  it('replaces in one pass (a pronunciation is not replaced again) and the later entry of a word wins', () => {
    const loop = speechTransform({ pronunciations: [{ word: 'a', pronunciation: 'b' }, { word: 'b', pronunciation: 'a' }] });
    expect(loop('a b')).toBe('b a');
    const later = speechTransform({ pronunciations: [{ word: 'tomato', pronunciation: 'tomayto' }, { word: 'Tomato', pronunciation: 'tomahto' }] });
    expect(later('tomato')).toBe('tomahto');
  });

  it('treats regular-expression characters literally and leaves text alone without rules', () => {
    expect(speechTransform({ pronunciations: [{ word: 'a.b', pronunciation: 'x' }] })('a.b axb')).toBe('x axb');
    expect(speechTransform(undefined)('cat 12')).toBe('cat 12');
    expect(speechTransform({ pronunciations: [] })('cat 12')).toBe('cat 12');
  });

  it('wraps a synthesizer so it says the pronunciation (and returns the same one without rules)', async () => {
    const said: string[] = [];
    const synth: Synthesizer = { synthesize: async (_v, text) => (said.push(text), { samples: new Float32Array(1), sampleRate: 16000 }) };
    expect(speakingAs(synth, undefined)).toBe(synth);
    await speakingAs(synth, { pronunciations: [{ word: 'cat', pronunciation: 'elephant' }], formatting: true }).synthesize('v', 'The cat costs $5.', 1);
    expect(said).toEqual(['The elephant costs five dollars.']);
  });
});

describe('speech formatting', () => {
  it('writes numbers as words', () => {
    expect(numberWords(0)).toBe('zero');
    expect(numberWords(42)).toBe('forty-two');
    expect(numberWords(1234)).toBe('one thousand two hundred thirty-four');
    expect(numberWords(2_000_015)).toBe('two million fifteen');
    expect(ordinalWords(1)).toBe('first');
    expect(ordinalWords(22)).toBe('twenty-second');
    expect(ordinalWords(30)).toBe('thirtieth');
    expect(ordinalWords(112)).toBe('one hundred twelfth');
    expect(yearWords(2026)).toBe('twenty twenty-six');
    expect(yearWords(2000)).toBe('two thousand');
    expect(yearWords(2005)).toBe('two thousand five');
    expect(yearWords(1905)).toBe('nineteen oh five');
  });

  it('says amounts, dates, times, percentages, ordinals and long digit runs', () => {
    expect(formatForSpeech('That is $12.50 in total.')).toBe('That is twelve dollars and fifty cents in total.');
    expect(formatForSpeech('It costs $1 or £1,200 or €0.99.')).toBe('It costs one dollar or one thousand two hundred pounds or ninety-nine cents.');
    expect(formatForSpeech('Raised $1.5 million.')).toBe('Raised one point five million dollars.');
    // RHVoice's English front end drops the currency symbol: its text gets the amounts in words, nothing else changed.
    expect(spellCurrency('Order 48213: $56.20, £5 or €0.99 at 3 pm.')).toBe('Order 48213: fifty-six dollars and twenty cents, five pounds or ninety-nine cents at 3 pm.');
    expect(rhvoiceText('The charge is $300 today.', 2000)).toBe('The charge is three hundred dollars today.');
    expect(formatForSpeech('Due 2026-12-25 or 12/25/2026.')).toBe('Due December twenty-fifth, twenty twenty-six or December twenty-fifth, twenty twenty-six.');
    expect(formatForSpeech('Open at 9:05 am until 17:30, or 3 PM.')).toBe('Open at nine oh five a m until seventeen thirty, or three p m.');
    expect(formatForSpeech('From 9 a.m. until 5 p.m.')).toBe('From nine a m until five p m.');
    expect(formatForSpeech('Up 45% on the 3rd try.')).toBe('Up forty-five percent on the third try.');
    expect(formatForSpeech('Call 5550100123 about order 1,234 of 3.5 kg.')).toBe('Call five five five zero one zero zero one two three about order one thousand two hundred thirty-four of three point five kg.');
  });

  it('leaves text without digits alone and makes no date or time of impossible ones', () => {
    expect(formatForSpeech('No numbers here.')).toBe('No numbers here.');
    expect(formatForSpeech('Code 2026-13-45.')).toBe('Code two thousand twenty-six-thirteen-forty-five.');
    expect(formatForSpeech('At 25:99.')).toBe('At twenty-five:ninety-nine.');
  });
});
