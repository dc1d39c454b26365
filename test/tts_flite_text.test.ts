// What Flite is given for written forms it misreads on its own (dates, addresses, currencies, abbreviations).
import { describe, expect, it } from 'vitest';
import { speakableText } from '../engine/models/flite-text.js';

describe('speakableText', () => {
  it('says numeric dates as dates, US order', () => {
    expect(speakableText('Due on 12/25/2026.')).toBe('Due on December 25th, 2026.');
    expect(speakableText('Since 3/1/25 and 11/22/2026')).toBe('Since March 1st, 2025 and November 22nd, 2026');
    // not a date: left for Flite (which says "a half")
    expect(speakableText('Add 1/2 cup, or 13/45/2026')).toBe('Add 1/2 cup, or 13/45/2026');
  });

  it('speaks the dots, slashes and @ of e-mail and web addresses', () => {
    expect(speakableText('Write to john.smith@example.com today.')).toBe('Write to john dot smith at example dot com today.');
    expect(speakableText('See https://www.parley.dev/help.')).toBe('See w w w dot parley dot dev slash help.');
  });

  it('keeps the currency of pounds and euros, and reads #, & and 24/7', () => {
    expect(speakableText('£5.50, €20 or 15€')).toBe('5 pounds 50 pence, 20 euros or 15 euros');
    expect(speakableText('Ticket #5 for Q&A, open 24/7')).toBe('Ticket number 5 for Q and A, open 24 7');
  });

  it('expands abbreviations Flite reads as words', () => {
    expect(speakableText('Apt. 4, Ste. 200, ext. 204, No. 5, Jan. 5, Sept. 9')).toBe('apartment 4, suite 200, extension 204, number 5, January 5, September 9');
  });

  it('leaves what Flite already says well untouched', () => {
    const text = 'Your balance is $142.75, due March 3rd at 2:30 p.m.; call 1-800-555-0199 or press 0. Thanks, Dr. Patel!';
    expect(speakableText(text)).toBe(text);
  });
});
