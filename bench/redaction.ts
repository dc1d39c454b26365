// Redaction detector benchmark (`npx tsx bench/redaction.ts`): a seeded, generated set of a few thousand transcript
// strings — card numbers of the major brands typed, grouped, spoken and split across turns, other PCI and PII in
// carrier sentences, and ordinary numbers (order numbers, times, amounts, tracking ids, dates, years…) and
// name-like words — scored for precision and recall per kind and false positives per kind of ordinary number.
// Issue 33 goals: card-number recall ≥ 99%, false positives on ordinary numbers ≤ 1%.
//
// Env: BENCH_SEED (default 33), BENCH_N (items per generator, default 150). Writes bench/results/redaction.json.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { Redactor } from '../engine/privacy/redact.js';
import { isPciKind, type RedactionKind, type RedactionSpan } from '../engine/privacy/types.js';
import { printTable, resultPath } from './lib/report.js';
import { mulberry32 } from '../engine/random.js';

// ---- seeded generator -------------------------------------------------------------------------------------------
const rnd = mulberry32(Number(process.env.BENCH_SEED ?? 33));
const N = Number(process.env.BENCH_N ?? 150);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
const chance = (p: number) => rnd() < p;
const randDigits = (n: number) => Array.from({ length: n }, () => int(0, 9)).join('');
const pad = (n: number, w: number) => String(n).padStart(w, '0');

// ---- numbers as people and Whisper write them -------------------------------------------------------------------
const UNITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const TEENS = ['ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const digitWord = (c: string) => (c === '0' ? pick(['zero', 'oh', 'oh']) : UNITS[Number(c)]!);
/** "4 1 1 1" as words, sometimes "double one". */
function wordsDigits(s: string): string {
  const out: string[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === s[i + 1] && s[i] !== s[i + 2] && chance(0.4)) {
      out.push('double', digitWord(s[i]!));
      i++;
    } else out.push(digitWord(s[i]!));
  }
  return out.join(' ');
}
function twoDigits(p: string): string {
  if (p[0] === '0') return `${digitWord('0')} ${digitWord(p[1]!)}`;
  const n = Number(p);
  if (n < 20) return TEENS[n - 10]!;
  return n % 10 ? `${TENS[Math.floor(n / 10)]} ${UNITS[n % 10]}` : TENS[n / 10]!;
}
/** "4111" → "forty one eleven"; a round pair before a lone digit is said digit by digit ("five oh four", not "fifty four"). */
function wordsPairs(s: string): string {
  const parts = s.match(/..?/g) ?? [];
  return parts.map((p, i) => (p.length === 1 ? digitWord(p) : p[1] === '0' && parts[i + 1]?.length === 1 ? wordsDigits(p) : twoDigits(p))).join(' ');
}

function luhnComplete(prefix: string, len: number): string {
  const body = prefix + randDigits(len - prefix.length - 1);
  for (let c = 0; c < 10; c++) {
    const d = body + c;
    let sum = 0;
    for (let i = d.length - 1, k = 0; i >= 0; i--, k++) {
      let x = Number(d[i]);
      if (k % 2) x = x * 2 > 9 ? x * 2 - 9 : x * 2;
      sum += x;
    }
    if (sum % 10 === 0) return d;
  }
  throw new Error('unreachable');
}
const BRANDS: [string, () => string][] = [
  ['visa', () => luhnComplete('4', pick([16, 16, 16, 13, 19]))],
  ['mastercard', () => luhnComplete(pick(['51', '52', '53', '54', '55', String(int(2221, 2720))]), 16)],
  ['amex', () => luhnComplete(pick(['34', '37']), 15)],
  ['discover', () => luhnComplete(pick(['6011', '65', String(int(644, 649))]), 16)],
  ['jcb', () => luhnComplete(String(int(3528, 3589)), 16)],
  ['diners', () => luhnComplete(pick(['36', '38', String(int(300, 305))]), 14)],
  ['unionpay', () => luhnComplete('62', pick([16, 17, 18, 19]))],
  ['maestro', () => luhnComplete(pick(['50', '56', '57', '58', '63', '67']), pick([16, 18, 19]))],
];
function cardGroups(d: string): string[] {
  const sizes = d.length === 15 ? [4, 6, 5] : d.length === 14 ? [4, 6, 4] : Array(Math.ceil(d.length / 4)).fill(4);
  const out: string[] = [];
  let at = 0;
  for (const s of sizes) {
    out.push(d.slice(at, at + s));
    at += s;
  }
  return out.filter(Boolean);
}
const FORMATS = ['plain', 'spaced', 'dashed', 'commas', 'thousands', 'words', 'words-commas', 'pairs', 'mixed', 'fillers', 'homophones'] as const;
type Format = (typeof FORMATS)[number];
function formatGroups(groups: string[], f: Format): string[] {
  switch (f) {
    case 'plain': return [groups.join('')];
    case 'spaced': return groups;
    case 'dashed': return [groups.join('-')];
    case 'commas': return groups.map((g, i) => (i < groups.length - 1 ? g + ',' : g));
    case 'words': return groups.map(wordsDigits);
    case 'words-commas': return groups.map((g, i) => wordsDigits(g) + (i < groups.length - 1 ? ',' : ''));
    // A pause between groups (a comma in the transcript) keeps "…seventy, seven oh five" from reading as 77.
    case 'pairs': return groups.map((g, i) => wordsPairs(g) + (i < groups.length - 1 ? ',' : ''));
    case 'mixed': return groups.map((g) => (chance(0.5) ? g : wordsDigits(g)));
    // Whisper's inverse normalisation sometimes writes a long spoken number with thousands separators.
    case 'thousands': return [groups.join('').replace(/\B(?=([0-9]{3})+(?![0-9]))/g, ',')];
    // The recognizer writes "for"/"to" for a spoken four/two between digits.
    case 'homophones': return groups.map((g) => wordsDigits(g).replace(/(?<= )(four|two)(?= )/g, (w) => (chance(0.5) ? (w === 'four' ? 'for' : 'to') : w)));
    case 'fillers': return groups.map((g, i) => (i > 0 && chance(0.5) ? `${pick(['uh', 'um', 'uh,'])} ${chance(0.5) ? g : wordsDigits(g)}` : chance(0.5) ? g : wordsDigits(g)));
  }
}

// ---- items ------------------------------------------------------------------------------------------------------
type Role = 'user' | 'assistant';
interface Target { turn: number; start: number; end: number; kind: RedactionKind }
interface Item { set: string; category: string; turns: { role: Role; text: string }[]; targets: Target[] }

/** Fills `{X}`, `{Y}` in a template, recording where each value landed. */
function fill(tpl: string, values: Record<string, [string, RedactionKind | null]>, turn = 0): { text: string; targets: Target[] } {
  let text = '';
  const targets: Target[] = [];
  for (const part of tpl.split(/(\{[A-Z]\})/)) {
    const m = /^\{([A-Z])\}$/.exec(part);
    if (m && values[m[1]!]) {
      const [v, kind] = values[m[1]!]!;
      if (kind) targets.push({ turn, start: text.length, end: text.length + v.length, kind });
      text += v;
    } else text += part;
  }
  return { text, targets };
}
function single(set: string, category: string, tpl: string, values: Record<string, [string, RedactionKind | null]>, ask?: string): Item {
  const turns: Item['turns'] = ask ? [{ role: 'assistant', text: ask }] : [];
  const f = fill(tpl, values, turns.length);
  turns.push({ role: 'user', text: f.text });
  return { set, category, turns, targets: f.targets };
}

const CARD_TPL = ['My card number is {X}.', 'The card number is {X}', "It's {X}.", 'Sure, {X}.', '{X}', "Yeah it's {X}, is that okay?", 'Visa, {X}.',
  'Charge it to {X} please.', 'Okay so the number on the card is {X}.', 'I want to pay with my credit card, {X}.', 'Um, {X}, uh, that is it.',
  'Use card {X} for the order.', 'My Mastercard is {X}', 'Here you go: {X}', 'the long number is {X} okay'];
function cards(): Item[] {
  const items: Item[] = [];
  for (const [brand, gen] of BRANDS)
    for (const f of FORMATS)
      for (let k = 0; k < Math.ceil(N / 20); k++) {
        const parts = formatGroups(cardGroups(gen()), f);
        const ask = chance(0.3) ? pick(["What's the card number?", 'Can I have the long number on the card?']) : undefined;
        items.push(single('card', `${brand}/${f}`, pick(CARD_TPL), { X: [parts.join(' '), 'CREDITCARDNUMBER'] }, ask));
      }
  return items;
}
/** The card dictated over two or three caller turns, sometimes with the agent's backchannel in between. */
function cardsAcrossTurns(): Item[] {
  const items: Item[] = [];
  for (let k = 0; k < N; k++) {
    const [brand, gen] = pick(BRANDS);
    const f = pick(['spaced', 'words', 'mixed', 'commas', 'pairs'] as const);
    const parts = formatGroups(cardGroups(gen()), f);
    const cuts = parts.length > 3 && chance(0.3) ? [1, int(2, parts.length - 1)] : [int(1, parts.length - 1)];
    const chunks = [0, ...cuts].map((c, i) => parts.slice(c, cuts[i] ?? parts.length).join(' ').replace(/,$/, ''));
    const turns: Item['turns'] = chance(0.3) ? [{ role: 'assistant', text: pick(["What's the card number?", 'Go ahead with the card number.']) }] : [];
    const targets: Target[] = [];
    chunks.forEach((chunk, i) => {
      if (i > 0 && chance(0.3)) turns.push({ role: 'assistant', text: pick(['Mm-hmm.', 'Okay, go on.', 'Got it, and the rest?']) });
      const tpl = i === 0 ? pick(['My card number is {X}', '{X}', 'ok {X}', 'Sure, {X}']) : pick(['{X}', 'and {X}', 'then {X}.', 'um {X}', 'the rest is {X}']);
      const fl = fill(tpl, { X: [chunk, 'CREDITCARDNUMBER'] }, turns.length);
      turns.push({ role: 'user', text: fl.text });
      targets.push(...fl.targets);
    });
    items.push({ set: 'card across turns', category: `${brand}/${f}/${chunks.length} turns`, turns, targets });
  }
  return items;
}

const FIRST = ['Ada', 'James', 'Maria', 'Wei', 'Priya', 'Carlos', 'Emily', 'Michael', 'Sarah', 'David', 'Olivia', 'Daniel', 'Sophia', 'Ahmed', 'Anna',
  'Laura', 'Kevin', 'Rachel', 'Thomas', 'Linda', 'Jennifer', 'Robert', 'Patricia', 'Brian', 'Natalie', 'Oscar', 'Fatima', 'Hannah', 'Lucas', 'Chloe'];
const LAST = ['Lovelace', 'Smith', 'Johnson', 'Garcia', 'Nguyen', 'Patel', 'Kim', 'Rodriguez', 'Okafor', 'Müller', 'Brown', 'Davis', 'Martinez',
  'Lopez', 'Wilson', 'Anderson', 'Thompson', "O'Brien", 'Kowalski', 'Haddad', 'Silva', 'Chen', 'Novak', 'Fischer', 'Ivanova'];
const STREETS = ['Main', 'Oak', 'Maple', 'Elm', 'Baker', 'Washington', 'Cedar', 'Pine', 'Sunset', 'Market', 'Mission', 'Valencia', 'Church', '5th', 'Lincoln'];
const SUFFIX = ['Street', 'St', 'Avenue', 'Ave', 'Road', 'Rd', 'Boulevard', 'Blvd', 'Lane', 'Drive', 'Court', 'Way', 'Place'];
const CITIES: [string, string][] = [['Springfield', 'IL'], ['Austin', 'TX'], ['Portland', 'OR'], ['San Jose', 'CA'], ['Denver', 'CO']];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const ORD = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth', 'tenth', 'eleventh', 'twelfth', 'thirteenth', 'fourteenth',
  'fifteenth', 'sixteenth', 'seventeenth', 'eighteenth', 'nineteenth', 'twentieth'];
const ordWord = (d: number) => (d <= 20 ? ORD[d - 1]! : d < 30 ? `twenty ${ORD[d - 21]}` : d === 30 ? 'thirtieth' : 'thirty first');
const yearWords = (y: number) =>
  y < 2000 ? `nineteen ${twoDigits(pad(y % 100, 2))}` : y % 100 < 10 ? `two thousand ${y % 100 ? UNITS[y % 10] : ''}`.trim() : pick([`two thousand ${twoDigits(String(y % 100))}`, `twenty ${twoDigits(String(y % 100))}`]);
const nanp = () => `${int(2, 9)}${int(0, 9)}${int(2, 9)}`.replace(/^(.)11$/, '$102') + `${int(2, 9)}${randDigits(2)}` + randDigits(4);
function abaNumber(): string {
  for (;;) {
    const d = pad(int(1, 12), 2) + randDigits(6);
    const x = [...d].map(Number);
    for (let c = 0; c < 10; c++) if ((3 * (x[0]! + x[3]! + x[6]!) + 7 * (x[1]! + x[4]! + x[7]!) + (x[2]! + x[5]! + c)) % 10 === 0) return d + c;
  }
}
const spokenOrTyped = (d: string, groups: string[]) => pick([groups.join(' '), groups.join('-'), d, groups.map(wordsDigits).join(', ')]);

function pii(): Item[] {
  const items: Item[] = [];
  for (let k = 0; k < N; k++) {
    const p = nanp();
    const phone = pick([`(${p.slice(0, 3)}) ${p.slice(3, 6)}-${p.slice(6)}`, `${p.slice(0, 3)}-${p.slice(3, 6)}-${p.slice(6)}`, `${p.slice(0, 3)}.${p.slice(3, 6)}.${p.slice(6)}`,
      `+1 ${p.slice(0, 3)} ${p.slice(3, 6)} ${p.slice(6)}`, p, `1-${p.slice(0, 3)}-${p.slice(3, 6)}-${p.slice(6)}`, [p.slice(0, 3), p.slice(3, 6), p.slice(6)].map(wordsDigits).join(', '),
      pick(['+44 20 7946 0958', '+49 30 1234567', '+33 1 42 68 53 00', '+91 98765 43210'])]);
    items.push(single('pii', 'phone', pick(['My phone number is {X}.', 'You can reach me at {X}', 'Call me back at {X}.', 'my cell is {X}', '{X}', "It's {X}", 'The best number is {X}.', 'text me on {X}']), { X: [phone, 'PHONENUMBER'] }));
    const ssn = pad(int(1, 899) === 666 ? 667 : int(1, 899), 3) + pad(int(1, 99), 2) + pad(int(1, 9999), 4);
    const ssnText = pick([`${ssn.slice(0, 3)}-${ssn.slice(3, 5)}-${ssn.slice(5)}`, spokenOrTyped(ssn, [ssn.slice(0, 3), ssn.slice(3, 5), ssn.slice(5)])]);
    items.push(single('pii', 'ssn', pick(['My social is {X}.', 'SSN {X}', 'my social security number is {X}', 'The SSN on file should be {X}']), { X: [ssnText, 'SSN'] }));
    const f = pick(FIRST).toLowerCase();
    const l = pick(LAST).toLowerCase().replace(/[^a-z]/g, '');
    const dom = pick(['gmail', 'example', 'outlook', 'company']);
    const tld = pick(['com', 'org', 'net', 'co dot uk']);
    const email = pick([`${f}.${l}@${dom}.${tld.replace(' dot ', '.')}`, `${f}_${l}${int(1, 99)}@${dom}.${tld.replace(' dot ', '.')}`, `${f} dot ${l} at ${dom} dot ${tld}`, `${f} at ${dom} dot ${tld}`, `${f}${l} at ${dom}.com`]);
    items.push(single('pii', 'email', pick(['My email is {X}', 'Send it to {X}.', "it's {X}", '{X}', 'email me at {X} please']), { X: [email, 'EMAIL'] }));
    const num = String(int(1, 9999));
    const [city, st] = pick(CITIES);
    const addr = `${pick([num, wordsDigits(num), num.length === 4 ? wordsPairs(num) : num])} ${pick(STREETS)} ${pick(SUFFIX)}${chance(0.3) ? `, Apt ${int(1, 40)}` : ''}${chance(0.4) ? `, ${city}, ${st} ${randDigits(5)}` : ''}`;
    items.push(single('pii', 'address', pick(['I live at {X}.', 'My address is {X}', 'Ship it to {X} please.', "It's {X}", '{X}', 'the billing address is {X}']), { X: [addr, 'ADDRESS'] }));
    const [y, m, d] = [int(1940, 2005), int(1, 12), int(1, 28)];
    const dob = pick([`${MONTHS[m - 1]} ${d}, ${y}`, `${pad(m, 2)}/${pad(d, 2)}/${y}`, `${d} ${MONTHS[m - 1]} ${y}`, `the ${ordWord(d)} of ${MONTHS[m - 1]} ${yearWords(y)}`,
      `${MONTHS[m - 1]} ${ordWord(d)} ${yearWords(y)}`, `${y}-${pad(m, 2)}-${pad(d, 2)}`, `${MONTHS[m - 1]} ${d}${d === 1 ? 'st' : d === 2 ? 'nd' : d === 3 ? 'rd' : 'th'} ${y}`]);
    if (chance(0.3)) items.push(single('pii', 'dob', '{X}.', { X: [dob, 'DATEOFBIRTH'] }, "What's your date of birth?"));
    else items.push(single('pii', 'dob', pick(['I was born on {X}.', 'My date of birth is {X}', 'DOB {X}', 'my birthday is {X}']), { X: [dob, 'DATEOFBIRTH'] }));
    const [F, L] = [pick(FIRST), pick(LAST)];
    const nameTpl = pick(['My name is {F} {L}.', 'Hi, this is {F} from Acme.', "I'm {F}.", 'Hi {F}, thanks.', '{F} speaking.', 'You can call me {F}.',
      'My first name is {F} and my last name is {L}.', 'I spoke to {F} {L} yesterday.', 'ASK', 'LOWER']);
    if (nameTpl === 'LOWER') items.push(single('pii', 'name (lower case)', 'my name is {F} {L}', { F: [F.toLowerCase(), 'FIRSTNAME'], L: [L.toLowerCase(), 'LASTNAME'] }));
    else if (nameTpl === 'ASK') items.push(single('pii', 'name', '{F} {L}.', { F: [F, 'FIRSTNAME'], L: [L, 'LASTNAME'] }, 'Can I have your full name please?'));
    else items.push(single('pii', 'name', nameTpl, { F: [F, 'FIRSTNAME'], L: [L, 'LASTNAME'] }));
  }
  return items;
}

function pci(): Item[] {
  const items: Item[] = [];
  for (let k = 0; k < N; k++) {
    const [m, y] = [int(1, 12), int(24, 35)];
    const exp = pick([`${pad(m, 2)}/${y}`, `${m}/${y}`, `${pad(m, 2)}/20${y}`, `${MONTHS[m - 1]} 20${y}`, `${MONTHS[m - 1]} ${twoDigits(String(y))}`,
      `${wordsDigits(pad(m, 2))} ${twoDigits(String(y))}`, `${wordsDigits(pad(m, 2))} slash ${wordsDigits(String(y))}`, `${pad(m, 2)}${y}`]);
    if (chance(0.3)) items.push(single('pci', 'expiry', '{X}.', { X: [exp, 'EXPIRYDATE'] }, 'And the expiry date?'));
    else items.push(single('pci', 'expiry', pick(['It expires {X}', 'expiry date is {X}', 'expiration {X}', 'the card expires on {X}.', 'exp {X}', 'valid thru {X}']), { X: [exp, 'EXPIRYDATE'] }));
    const cvv = randDigits(pick([3, 3, 4]));
    const cvvText = pick([cvv, cvv.split('').join(' '), wordsDigits(cvv), cvv.length === 3 && cvv[0] !== '0' ? `${UNITS[Number(cvv[0])]} ${twoDigits(cvv.slice(1))}` : cvv]);
    if (chance(0.3)) items.push(single('pci', 'cvv', pick(['{X}.', "it's {X}"]), { X: [cvvText, 'CVV'] }, 'And the security code on the back?'));
    else items.push(single('pci', 'cvv', pick(['The CVV is {X}', 'security code {X}', 'CVC {X}.', 'the three digits on the back are {X}']), { X: [cvvText, 'CVV'] }));
    const acct = randDigits(int(8, 12));
    const acctText = pick([acct, wordsDigits(acct), acct.match(/.{1,4}/g)!.join(' ')]);
    items.push(single('pci', 'account', pick(['my account number is {X}', 'checking account {X}', 'The account number is {X}.']), { X: [acctText, 'ACCOUNTNUMBER'] }));
    const aba = abaNumber();
    const abaText = pick([aba, wordsDigits(aba)]);
    items.push(single('pci', 'routing', pick(['routing number is {X}', 'The routing number is {X}.', 'ABA {X}']), { X: [abaText, 'ROUTINGNUMBER'] }));
  }
  return items;
}

/** Ordinary numbers: none of these should be redacted. */
function ordinary(): Item[] {
  const items: Item[] = [];
  const add = (category: string, text: string) => items.push({ set: 'ordinary', category, turns: [{ role: 'user', text }], targets: [] });
  for (let k = 0; k < N; k++) {
    const ord = randDigits(int(6, 16));
    add('order number', pick([`My order number is ${ord}.`, `order #${ord}`, `The order is ${wordsDigits(ord)}`, `It's about order ${ord}, it never arrived.`, `order number ${ord.match(/.{1,4}/g)!.join(' ')}`]));
    add('tracking id', pick([`tracking number 1Z${randDigits(3)}AA${randDigits(10)}`, `The tracking number is ${randDigits(pick([12, 15, 20, 22]))}.`, `track ${wordsDigits(randDigits(12))}`, `tracking ${randDigits(4)} ${randDigits(4)} ${randDigits(4)} ${randDigits(4)}`]));
    const [h, mm] = [int(1, 12), pad(int(0, 59), 2)];
    add('time', pick([`Can we do it at ${h}:${mm}?`, `at ${h} ${mm} pm`, `around ${UNITS[h] ?? TEENS[h - 10]} ${twoDigits(mm)}`, `${h}:${mm} am works`, `between ${h}:${mm} and ${int(1, 12)}:${pad(int(0, 59), 2)}`]));
    const amt = `${int(1, 99)},${pad(int(0, 999), 3)}.${pad(int(0, 99), 2)}`;
    add('amount', pick([`The total was $${amt}.`, `${int(10, 9999)}.${pad(int(0, 99), 2)} dollars`, `it costs ${int(2, 99)} dollars and ${int(1, 99)} cents`, `I was charged $${int(1, 999)}`, `a refund of ${amt} please`]));
    add('quantity', pick([`I need ${int(2, 500)} boxes`, `for ${int(2, 12)} people`, `${int(100, 99999)} items in stock`, `it took ${int(2, 60)} minutes`]));
    add('year', pick([`back in ${int(1950, 2025)}`, `since ${int(1990, 2024)}`, `between ${int(1990, 2010)} and ${int(2011, 2025)}`, `the ${int(2015, 2024)} model`]));
    add('date', pick([`It was delivered on ${pad(int(1, 12), 2)}/${pad(int(1, 28), 2)}/${int(2020, 2025)}.`, `The meeting is on ${MONTHS[int(0, 11)]} ${int(1, 28)}, ${int(2020, 2026)}.`, `on the ${ordWord(int(1, 28))} of ${MONTHS[int(0, 11)]}`, `by ${pad(int(1, 12), 2)}/${pad(int(1, 28), 2)}`]));
    add('zip code', pick([`my zip code is ${randDigits(5)}`, `zip ${randDigits(5)}-${randDigits(4)}`, `the postal code is ${wordsDigits(randDigits(5))}`]));
    add('reference', pick([`confirmation code ${randDigits(3)}${String.fromCharCode(int(65, 90))}${randDigits(3)}`, `reference number ${randDigits(int(8, 14))}`, `ticket ${randDigits(int(5, 9))}`, `case number ${randDigits(int(6, 12))}`, `invoice ${randDigits(int(6, 10))}`, `member id ${randDigits(int(8, 12))}`]));
    add('misc', pick([`room ${int(100, 2500)}`, `flight ${int(10, 9999)}`, `extension ${randDigits(4)}`, `version ${int(1, 20)}.${int(0, 9)}.${int(0, 30)}`, `a ${int(5, 50)}% discount`, `call 911`, `page ${int(1, 400)}`, `I'm ${int(18, 90)} years old`]));
    add('everyday', pick([`I called ${int(2, 9)} times last week`, `My son is ${int(2, 17)} and my daughter is ${int(2, 17)}.`, `The score was ${int(0, 9)} ${int(0, 9)}.`,
      `I was on hold for ${int(10, 90)} minutes!`, `at ${pick(['ten thirty', 'nine fifteen', 'two forty five', 'eleven'])} tomorrow`, `from ${int(7, 10)} to ${int(4, 7)}`,
      `we have ${int(2, 5)} cars and ${int(1, 4)} ${pick(['dogs', 'bikes'])}`, `it's ${pick(['one', 'two', 'three'])} of ${pick(['four', 'five', 'six'])}`, `Press ${int(1, 9)} for more options.`,
      `I'd like ${int(2, 6)} of the ${int(10, 99)} packs`, `She was born in ${pick(['Ohio', 'a small town', 'the spring'])}.`, `it expires in ${int(2, 30)} days`]));
    add('bare id, 5-9 digits', pick([`it's ${randDigits(int(5, 9))}`, `${randDigits(int(5, 9))}`, `number ${wordsDigits(randDigits(int(5, 9)))}`]));
  }
  return items;
}
/** Numbers with no context at all that look like a card or a phone number: shown apart, not a goal. */
function unlabelled(): Item[] {
  const items: Item[] = [];
  for (let k = 0; k < N; k++) {
    const n = int(13, 19);
    items.push({ set: 'unlabelled', category: '13-19 digits, no context', turns: [{ role: 'user', text: `it's ${randDigits(n)}` }], targets: [] });
    items.push({ set: 'unlabelled', category: '10 digits, no context', turns: [{ role: 'user', text: `it's ${randDigits(10)}` }], targets: [] });
  }
  return items;
}
const NAME_WORDS = ['Will you send me the receipt?', 'May I ask a question?', 'Bill me later, please.', 'Mark my words, it broke again.', 'I hope so.',
  'Is there a grace period?', "I'll be there in June.", 'We sell rose bushes.', 'Can you bill my account?', 'Will that be all?', 'May I speak to a manager?',
  'Sure, that works.', 'I live in Austin, Texas.', 'We flew to Paris in May.', 'Virginia Beach was lovely.', 'I bank with Chase.', 'Is this Amazon?',
  'This is great, thanks.', "I'm fine, thank you.", "I'm calling about my bill.", 'Hunter green, please.', 'Can I get a faith based discount?', 'This is Bank Of America?',
  "I'm Happy with it.", 'Thanks, Will do.', 'Crystal clear.', 'Page two, please.', 'Hello, May I help?', 'Jack up the price?', 'The Ray Ban glasses.',
  'Grant me access please.', 'Rich people, right?', 'Pat the dog.', 'Penny for your thoughts.', 'Frank said nothing.', 'Summer is coming.',
  'Can I get a receipt?', 'I need to change my address.', 'This is ridiculous.', "I'm Canadian.", 'Is this Chase?', 'I am Ready.', 'Thanks, Have a good day.',
  'Hello, Sunshine Cleaning here.', 'Justice was served.', 'Say hi to Jordan River tours.', 'We went to Virginia last May.', 'Destiny 2 is a game.',
  'Happy Birthday!', 'Hope you are well.', 'Will it rain today?', 'Sterling silver, please.', 'I like Amber Ale.', 'Call me Tomorrow.', 'My name is not important.',
  'Mark it as paid.', 'Sage advice.', 'The Price is right.', 'Ray tracing is on.', 'Bill Pay is not working.', 'May the fourth be with you.', 'Hi, May I ask who is calling?'];
function nameLike(): Item[] {
  return NAME_WORDS.flatMap((t) => [0, 1, 2].map(() => ({ set: 'name-like words', category: 'ordinary words', turns: [{ role: 'user' as Role, text: t }], targets: [] })));
}

/** Real text with no personal data: the Asterisk prompts' transcripts (Debian asterisk-core-sounds-en), when installed. */
function asteriskPrompts(): Item[] {
  const file = '/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz';
  if (!existsSync(file)) return [];
  const lines = gunzipSync(readFileSync(file)).toString('utf8').split('\n');
  return lines
    .map((l) => l.replace(/^[^:]*:\s*/, '').trim())
    .filter(Boolean)
    .map((text) => ({ set: 'real text', category: 'Asterisk prompts', turns: [{ role: 'user' as Role, text }], targets: [] }));
}

// ---- scoring ----------------------------------------------------------------------------------------------------
const ALNUM = /[\p{L}\p{N}]/u;
interface Counts { targets: number; found: number; spans: number; correct: number }
const perKind = new Map<string, Counts>();
const perCategory = new Map<string, { n: number; ok: number }>();
const counts = (k: string) => perKind.get(k) ?? (perKind.set(k, { targets: 0, found: 0, spans: 0, correct: 0 }), perKind.get(k)!);
const misses: string[] = [];
let elapsed = 0;
let strings = 0;

function score(item: Item): void {
  const r = new Redactor({ pii: true, pci: true });
  const final: RedactionSpan[][] = [];
  const t0 = performance.now();
  item.turns.forEach((t, i) => {
    const res = r.redactTurn(t.text, { role: t.role });
    final[i] = res.spans;
    for (const rev of res.revisions) final[rev.turn] = rev.spans;
  });
  elapsed += performance.now() - t0;
  strings += item.turns.length;
  let ok = true;
  for (const tg of item.targets) {
    const text = item.turns[tg.turn]!.text;
    const spans = final[tg.turn]!.filter((s) => s.kind === tg.kind);
    let covered = true;
    for (let c = tg.start; c < tg.end && covered; c++) if (ALNUM.test(text[c]!) && !spans.some((s) => s.start <= c && c < s.end)) covered = false;
    const k = counts(tg.kind);
    k.targets++;
    if (covered) k.found++;
    else {
      ok = false;
      if (misses.length < 400) misses.push(`miss ${tg.kind} [${item.category}]: ${item.turns.map((t) => t.text).join(' / ')}`);
    }
  }
  item.turns.forEach((t, i) => {
    if (t.role !== 'user') return;
    for (const s of final[i]!) {
      const k = counts(s.kind);
      k.spans++;
      const right = item.targets.some((tg) => tg.turn === i && tg.kind === s.kind && tg.start < s.end && s.start < tg.end);
      if (right) k.correct++;
      else {
        ok = false;
        if (misses.length < 400) misses.push(`false ${s.kind} [${item.category}]: ${t.text}`);
      }
    }
  });
  const key = `${item.set}\u0000${item.category}`;
  const c = perCategory.get(key) ?? { n: 0, ok: 0 };
  c.n++;
  if (ok) c.ok++;
  perCategory.set(key, c);
}

const items = [...cards(), ...cardsAcrossTurns(), ...pii(), ...pci(), ...ordinary(), ...unlabelled(), ...nameLike(), ...asteriskPrompts()];
for (const it of items) score(it);

const pct = (a: number, b: number) => (b ? `${((100 * a) / b).toFixed(1)}%` : '-');
const kinds = [...perKind.entries()].sort((a, b) => Number(isPciKind(b[0] as RedactionKind)) - Number(isPciKind(a[0] as RedactionKind)) || a[0].localeCompare(b[0]));
printTable(`Redaction detector: ${items.length} generated items, ${strings} strings (seed ${process.env.BENCH_SEED ?? 33})`, ['kind', 'targets', 'recall', 'spans', 'precision'],
  kinds.map(([k, c]) => [k, String(c.targets), pct(c.found, c.targets), String(c.spans), pct(c.correct, c.spans)]), 1);

const cat = (set: string) => [...perCategory.entries()].filter(([k]) => k.startsWith(set + '\u0000')).map(([k, v]) => [k.split('\u0000')[1]!, v] as const);
const byFormat = new Map<string, { n: number; ok: number }>();
for (const set of ['card', 'card across turns'])
  for (const [c, v] of cat(set)) {
    const key = `${set === 'card' ? 'one turn' : 'across turns'}: ${c.split('/').slice(1).join(', ')}`;
    const x = byFormat.get(key) ?? { n: 0, ok: 0 };
    x.n += v.n;
    x.ok += v.ok;
    byFormat.set(key, x);
  }
printTable('Card numbers by format (all brands; an item counts when the card is fully covered and nothing else is redacted)', ['format', 'items', 'correct'],
  [...byFormat.entries()].map(([k, v]) => [k, String(v.n), pct(v.ok, v.n)]), 1);
const brandRows = BRANDS.map(([b]) => {
  const v = cat('card').filter(([c]) => c.startsWith(b + '/')).reduce((a, [, x]) => ({ n: a.n + x.n, ok: a.ok + x.ok }), { n: 0, ok: 0 });
  return [b, String(v.n), pct(v.ok, v.n)];
});
printTable('Card numbers by brand (one turn)', ['brand', 'items', 'correct'], brandRows, 1);

const fpRows = (set: string) => cat(set).map(([c, v]) => [c, String(v.n), String(v.n - v.ok), pct(v.n - v.ok, v.n)]);
const ord = cat('ordinary').reduce((a, [, v]) => ({ n: a.n + v.n, ok: a.ok + v.ok }), { n: 0, ok: 0 });
printTable('Ordinary numbers: strings with anything redacted (false positives)', ['kind of number', 'strings', 'redacted', 'rate'],
  [...fpRows('ordinary'), ['all ordinary numbers', String(ord.n), String(ord.n - ord.ok), pct(ord.n - ord.ok, ord.n)]], 1);
printTable('Unlabelled long numbers (no context: indistinguishable from a card or phone number; not in the goal)', ['kind', 'strings', 'redacted', 'rate'], fpRows('unlabelled'), 1);
printTable('Ordinary words: name-like words ("Will you…", "May I…", "Bill me later") and real prompts', ['set', 'strings', 'redacted', 'rate'],
  [...fpRows('name-like words'), ...(cat('real text').length ? fpRows('real text') : [['Asterisk prompts (not installed: skipped)', '0', '0', '-']])], 1);

const card = perKind.get('CREDITCARDNUMBER')!;
const cardRecall = card.found / card.targets;
const ordFp = (ord.n - ord.ok) / ord.n;
console.log(`\nGoals: card-number recall ${(100 * cardRecall).toFixed(2)}% (goal ≥ 99%) ${cardRecall >= 0.99 ? 'MET' : 'NOT MET'}; ` +
  `false positives on ordinary numbers ${(100 * ordFp).toFixed(2)}% (goal ≤ 1%) ${ordFp <= 0.01 ? 'MET' : 'NOT MET'}; ` +
  `${((1000 * elapsed) / strings).toFixed(0)} µs per string.`);
if (process.env.BENCH_MISSES) for (const m of misses.slice(0, Number(process.env.BENCH_MISSES))) console.log(m);
writeFileSync(resultPath('redaction'), JSON.stringify({ seed: Number(process.env.BENCH_SEED ?? 33), items: items.length, strings, cardRecall, ordinaryFalsePositiveRate: ordFp,
  perKind: Object.fromEntries(perKind), perCategory: Object.fromEntries([...perCategory].map(([k, v]) => [k.replace('\u0000', ': '), v])), usPerString: (1000 * elapsed) / strings }, null, 2));
