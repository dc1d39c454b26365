// Deterministic security scan of agent configuration: secrets, card numbers, national IDs, injection markers, URL credentials.

export type ScanRule = 'api_key' | 'private_key' | 'card_number' | 'national_id' | 'prompt_injection' | 'url_credentials';

export interface ScanFinding {
  rule: ScanRule;
  section: string;
  path: string;
  /** Redacted evidence: never the secret itself. */
  excerpt: string;
  message: string;
}

const MAX_TOKEN = 512;

/** Token formats of well-known providers (bounded quantifiers keep matching linear). */
const KEY_PATTERNS: { name: string; re: RegExp }[] = [
  { name: 'Anthropic API key', re: /\bsk-ant-[A-Za-z0-9_-]{20,200}/g },
  { name: 'OpenAI API key', re: /\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,200}/g },
  { name: 'Stripe secret key', re: /\b[rs]k_live_[A-Za-z0-9]{16,200}/g },
  { name: 'platform API key', re: /\bsk_[A-Za-z0-9]{32,200}/g },
  { name: 'AWS access key id', re: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g },
  { name: 'GitHub token', re: /\b(?:gh[opsur]_[A-Za-z0-9]{36,100}|github_pat_[A-Za-z0-9_]{40,200})/g },
  { name: 'Slack token', re: /\bxox[baprs]-[A-Za-z0-9-]{10,200}/g },
  { name: 'Google API key', re: /\bAIza[A-Za-z0-9_-]{35}/g },
  { name: 'bearer token', re: /\bBearer\s+(?!\{\{)[A-Za-z0-9._~+/=-]{20,512}/g },
];
const JWT = /\beyJ[A-Za-z0-9_-]{8,1000}\.[A-Za-z0-9_-]{8,2000}\.[A-Za-z0-9_-]{8,1000}/g;
const PEM = /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/g;
const CARD = /(?<![\d+])(?:\d[ -]?){12,18}\d(?!\d)/g;
const SSN = /\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b/g;
/** 12 digits, optionally grouped 4-4-4, not part of a longer (space-grouped) number such as a card. */
const AADHAAR = /(?<![\d+]|\d )[2-9]\d{3} ?\d{4} ?\d{4}(?!\d| \d)/g;
const PAN = /\b[A-Z]{3}[ABCFGHLJPT][A-Z]\d{4}[A-Z]\b/g;
const NINO = /\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b/g;
const INJECTION: RegExp[] = [
  /\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding)\s+(?:instructions|prompts?|rules|directions)/i,
  /\bdisregard\s+(?:the\s+|your\s+)?system\s+prompt/i,
  /\b(?:reveal|print|show|repeat)\s+(?:me\s+)?(?:your|the)\s+system\s+prompt/i,
  /\byou\s+are\s+now\s+DAN\b|\bdo\s+anything\s+now\b/i,
  /<\|im_start\|>|<\|system\|>|\[INST\]|<<SYS>>/i,
];
const URL_RE = /\bhttps?:\/\/[^\s"'<>]{1,2048}/gi;
const CRED_PARAM = /^(?:api[_-]?key|apikey|key|token|access[_-]?token|secret|password|passwd|pwd|sig|signature)$/i;
const CRED_NAME = /authorization|api[_-]?key|token|secret|password|passwd/i;
const TEMPLATE = /\{\{[^}]{1,100}\}\}/g;

function mask(value: string): string {
  return `${value.slice(0, 4)}…(${value.length} chars)`;
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

function knownIssuer(d: string): boolean {
  const two = Number(d.slice(0, 2));
  const four = Number(d.slice(0, 4));
  if (d.startsWith('4')) return [13, 16, 19].includes(d.length);
  if ((two >= 51 && two <= 55) || (four >= 2221 && four <= 2720)) return d.length === 16;
  if (two === 34 || two === 37) return d.length === 15;
  if (d.startsWith('6011') || d.startsWith('65') || (four >= 6440 && four <= 6499)) return d.length >= 16;
  if (four >= 3528 && four <= 3589) return d.length >= 16;
  if (two === 36 || two === 38 || (four >= 3000 && four <= 3059)) return d.length === 14;
  return false;
}

// Verhoeff checksum tables (Aadhaar).
const VD = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 3, 4, 0, 6, 7, 8, 9, 5], [2, 3, 4, 0, 1, 7, 8, 9, 5, 6], [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
  [4, 0, 1, 2, 3, 9, 5, 6, 7, 8], [5, 9, 8, 7, 6, 0, 4, 3, 2, 1], [6, 5, 9, 8, 7, 1, 0, 4, 3, 2], [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
  [8, 7, 6, 5, 9, 3, 2, 1, 0, 4], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
];
const VP = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 5, 7, 6, 2, 8, 3, 0, 9, 4], [5, 8, 0, 3, 7, 9, 6, 1, 4, 2], [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
  [9, 4, 5, 3, 1, 2, 6, 8, 7, 0], [4, 2, 8, 6, 5, 7, 3, 9, 0, 1], [2, 7, 9, 3, 8, 0, 6, 4, 1, 5], [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
];
export function verhoeffValid(digits: string): boolean {
  let c = 0;
  for (let i = 0; i < digits.length; i++) {
    const d = digits.charCodeAt(digits.length - 1 - i) - 48;
    c = (VD[c] as number[])[(VP[i % 8] as number[])[d] as number] as number;
  }
  return c === 0;
}

function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) h -= (n / s.length) * Math.log2(n / s.length);
  return h;
}

function scanText(text: string, at: (rule: ScanRule, excerpt: string, message: string) => void): void {
  const plain = text.replace(TEMPLATE, ' ');
  const seen = new Set<string>();
  const once = (rule: ScanRule, value: string, excerpt: string, message: string) => {
    if (seen.has(`${rule}:${value}`)) return;
    seen.add(`${rule}:${value}`);
    at(rule, excerpt, message);
  };
  for (const { name, re } of KEY_PATTERNS) {
    for (const m of plain.matchAll(re)) once('api_key', m[0], mask(m[0].replace(/^Bearer\s+/, '')), `A ${name} appears in the configuration.`);
  }
  for (const m of plain.matchAll(JWT)) {
    try {
      const header = JSON.parse(Buffer.from(m[0].split('.')[0] as string, 'base64url').toString('utf8')) as { alg?: unknown };
      if (header.alg) once('api_key', m[0], mask(m[0]), 'A JSON Web Token appears in the configuration.');
    } catch {
      /* not a JWT */
    }
  }
  for (const m of plain.matchAll(PEM)) once('private_key', m[0], 'PEM private key block', 'A private key appears in the configuration.');
  for (const m of plain.matchAll(CARD)) {
    const digits = m[0].replace(/[ -]/g, '');
    if (digits.length >= 13 && digits.length <= 19 && knownIssuer(digits) && luhn(digits)) {
      once('card_number', digits, `card ending ${digits.slice(-4)}`, 'A payment card number (Luhn-valid) appears in the configuration.');
    }
  }
  for (const m of plain.matchAll(SSN)) once('national_id', m[0], `SSN ending ${m[0].slice(-4)}`, 'A US Social Security number appears in the configuration.');
  for (const m of plain.matchAll(AADHAAR)) {
    const digits = m[0].replace(/ /g, '');
    if (verhoeffValid(digits)) once('national_id', digits, `Aadhaar ending ${digits.slice(-4)}`, 'An Aadhaar number (checksum-valid) appears in the configuration.');
  }
  for (const m of plain.matchAll(PAN)) once('national_id', m[0], `PAN ending ${m[0].slice(-4)}`, 'An Indian PAN appears in the configuration.');
  for (const m of plain.matchAll(NINO)) once('national_id', m[0], `NINO ending ${m[0].slice(-3)}`, 'A UK National Insurance number appears in the configuration.');
  for (const re of INJECTION) {
    const m = re.exec(plain);
    if (m) once('prompt_injection', m[0], m[0].slice(0, 60), 'A prompt-injection marker appears in the configuration.');
  }
  for (const m of plain.matchAll(URL_RE)) {
    let url: URL;
    try {
      url = new URL(m[0]);
    } catch {
      continue;
    }
    if (url.password || (url.username && url.username.length > 0 && m[0].includes('@'))) {
      once('url_credentials', m[0], `${url.protocol}//***@${url.host}`, 'A URL carries credentials in its user-info part.');
    }
    for (const [k, v] of url.searchParams) {
      if (CRED_PARAM.test(k) && v.length >= 6 && !/^\s*$/.test(v)) {
        once('url_credentials', `${url.host}?${k}`, `${url.host}…?${k}=***`, `A URL passes a credential in its "${k}" query parameter.`);
      }
    }
  }
}

interface Leaf {
  path: string;
  text: string;
  /** Name of the field (or of the {key, value} pair) holding the text. */
  key: string | null;
  /** Inside an `auth` block, whose fields name secrets in the vault rather than hold them. */
  inAuth: boolean;
}

/** Every string and number in the content, iteratively (no recursion depth limit), with its path. */
function leaves(content: unknown): Leaf[] {
  const out: Leaf[] = [];
  const stack: { value: unknown; path: string; key: string | null; inAuth: boolean }[] = [{ value: content, path: '', key: null, inAuth: false }];
  const join = (path: string, k: string | number) => (path ? `${path}.${k}` : String(k));
  while (stack.length) {
    const { value, path, key, inAuth } = stack.pop() as (typeof stack)[number];
    if (typeof value === 'string') out.push({ path, text: value, key, inAuth });
    else if (typeof value === 'number' && Number.isFinite(value)) out.push({ path, text: String(value), key, inAuth });
    else if (Array.isArray(value)) value.forEach((v, i) => stack.push({ value: v, path: join(path, i), key, inAuth }));
    else if (value && typeof value === 'object') {
      const obj = value as Record<string, unknown>;
      // {key, value} pairs (headersArray, queryParams): the value is judged by the pair's key name.
      const pairKey = typeof obj.key === 'string' && 'value' in obj ? obj.key : null;
      for (const [k, v] of Object.entries(obj)) {
        stack.push({ value: v, path: join(path, k), key: pairKey !== null && k === 'value' ? pairKey : k, inAuth: inAuth || k === 'auth' });
      }
    }
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

export function scanSection(section: string, content: unknown): ScanFinding[] {
  const findings: ScanFinding[] = [];
  for (const { path, text, key, inAuth } of leaves(content)) {
    scanText(text, (rule, excerpt, message) => findings.push({ rule, section, path, excerpt, message }));
    // Generic: a credential-named field holding a high-entropy literal (not a vault secret name in an auth block).
    const literal = text.replace(/^Bearer\s+/i, '').trim();
    const looksLikeSecretName = inAuth && /^[A-Za-z][A-Za-z0-9_.-]{0,127}$/.test(literal);
    if (key && !looksLikeSecretName && CRED_NAME.test(key) && literal.length >= 16 && literal.length <= MAX_TOKEN && !/\{\{/.test(literal) && !/\s/.test(literal) && entropy(literal) >= 3.5) {
      if (!findings.some((f) => f.path === path && f.rule === 'api_key')) {
        findings.push({ rule: 'api_key', section, path, excerpt: mask(literal), message: `A credential appears as a literal value of "${key}".` });
      }
    }
  }
  return findings;
}

export function scanConfig(sections: Record<string, unknown>): ScanFinding[] {
  return Object.keys(sections)
    .sort()
    .flatMap((s) => scanSection(s, sections[s]));
}

export function summarizeFindings(findings: ScanFinding[]): string | null {
  if (findings.length === 0) return null;
  const parts = findings.slice(0, 10).map((f) => `${f.rule} at ${f.section}${f.path ? `.${f.path}` : ''} (${f.excerpt})`);
  const more = findings.length > 10 ? `; and ${findings.length - 10} more` : '';
  return `Security scan found ${findings.length} issue(s): ${parts.join('; ')}${more}`;
}
