// Splits an item's text into overlapping chunks for the full-text index: about `size` characters each, cut at a
// paragraph, else a sentence, else a word boundary, each starting with about `overlap` characters of the one before
// (whole sentences or words where they fit), so a passage cut in two is still found whole in one of them.

export interface ChunkOptions {
  /** Target length of a chunk in characters (a chunk may run a little past it to end on a boundary). */
  size?: number;
  /** Characters of the previous chunk repeated at the start of the next. */
  overlap?: number;
}

export const CHUNK_SIZE = 800;
export const CHUNK_OVERLAP = 100;

/** Text with runs of spaces folded, line ends normalized and blank-line runs made one paragraph break. */
export function normalizeText(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Where the text may be cut, best first: after a paragraph break, a sentence end, a line end, a space. */
const BOUNDARIES = [/\n\n/g, /[.!?]["')\]]?\s/g, /\n/g, /\s/g];

/** The best cut in text[from, to): the last boundary of the best kind found past `min`; `to` when there is none. */
function cutAt(text: string, min: number, to: number): number {
  for (const re of BOUNDARIES) {
    let best = -1;
    re.lastIndex = min;
    for (let m = re.exec(text); m && m.index + m[0].length <= to; m = re.exec(text)) best = m.index + m[0].length;
    if (best > min) return best;
  }
  return to;
}

/** Start of the overlap: about `overlap` characters back from `end`, moved forward to a sentence or word start. */
function overlapStart(text: string, start: number, end: number, overlap: number): number {
  if (overlap <= 0) return end;
  const from = Math.max(start + 1, end - overlap);
  const window = text.slice(from, end);
  const sentence = /[.!?]["')\]]?\s+/g;
  let m: RegExpExecArray | null;
  let best = -1;
  while ((m = sentence.exec(window))) if (m.index + m[0].length < window.length) { best = m.index + m[0].length; break; }
  if (best < 0) {
    const space = window.search(/\s/);
    best = space < 0 ? 0 : space + 1;
  }
  return Math.min(end, from + best);
}

export function chunkText(raw: string, options: ChunkOptions = {}): string[] {
  const size = Math.max(50, options.size ?? CHUNK_SIZE);
  const overlap = Math.max(0, Math.min(options.overlap ?? CHUNK_OVERLAP, Math.floor(size / 2)));
  const text = normalizeText(raw);
  if (!text) return [];
  if (text.length <= size) return [text];
  const chunks: string[] = [];
  let start = 0;
  while (start < text.length) {
    const hardEnd = Math.min(text.length, start + size);
    // The last piece: whatever is left when it fits.
    const end = hardEnd >= text.length ? text.length : cutAt(text, start + Math.floor(size / 2), hardEnd);
    const piece = text.slice(start, end).trim();
    if (piece) chunks.push(piece);
    if (end >= text.length) break;
    const next = overlapStart(text, start, end, overlap);
    start = next > start ? next : end;
  }
  return chunks;
}
