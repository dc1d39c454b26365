// G.711 mu-law and A-law companding, bit-exact with the ITU-T G.191 reference (g711.c), via 256/65536-entry tables.

/** ITU-T G.191 ulaw_compress for one 16-bit linear sample (negative values use one's complement, as the reference does). */
function muLawCompress(pcm: number): number {
  let absno = pcm < 0 ? (~pcm >> 2) + 33 : (pcm >> 2) + 33;
  if (absno > 0x1fff) absno = 0x1fff;
  let i = absno >> 6;
  let segno = 1;
  while (i !== 0) {
    segno++;
    i >>= 1;
  }
  const high = 0x08 - segno;
  const low = 0x0f - ((absno >> segno) & 0x0f);
  let out = (high << 4) | low;
  if (pcm >= 0) out |= 0x80;
  return out;
}

/** ITU-T G.191 ulaw_expand for one byte. */
function muLawExpand(byte: number): number {
  const sign = byte < 0x80 ? -1 : 1;
  const inv = ~byte & 0xff;
  const exponent = (inv >> 4) & 0x07;
  const mantissa = inv & 0x0f;
  const step = 4 << (exponent + 1);
  return sign * ((0x80 << exponent) + step * mantissa + step / 2 - 4 * 33);
}

/** ITU-T G.191 alaw_compress for one 16-bit linear sample. */
function aLawCompress(pcm: number): number {
  let ix = pcm < 0 ? ~pcm >> 4 : pcm >> 4;
  if (ix > 15) {
    let iexp = 1;
    while (ix > 16 + 15) {
      ix >>= 1;
      iexp++;
    }
    ix -= 16;
    ix += iexp << 4;
  }
  if (pcm >= 0) ix |= 0x80;
  return ix ^ 0x55;
}

/** ITU-T G.191 alaw_expand for one byte. */
function aLawExpand(byte: number): number {
  const ix = (byte ^ 0x55) & 0x7f;
  const iexp = ix >> 4;
  let mant = ix & 0x0f;
  if (iexp > 0) mant += 16;
  mant = (mant << 4) + 0x08;
  if (iexp > 1) mant <<= iexp - 1;
  return byte > 127 ? mant : -mant;
}

function expandTable(expand: (b: number) => number): Int16Array {
  const t = new Int16Array(256);
  for (let b = 0; b < 256; b++) t[b] = expand(b);
  return t;
}

/** Decode tables: byte -> 16-bit linear value. */
export const MULAW_TO_LINEAR: Int16Array = expandTable(muLawExpand);
export const ALAW_TO_LINEAR: Int16Array = expandTable(aLawExpand);

let muEncodeTable: Uint8Array | undefined;
let aEncodeTable: Uint8Array | undefined;

function compressTable(compress: (pcm: number) => number): Uint8Array {
  const t = new Uint8Array(65536);
  for (let v = -32768; v < 32768; v++) t[v & 0xffff] = compress(v);
  return t;
}

/** mu-law byte for a 16-bit linear sample (integer in [-32768, 32767]). */
export function linearToMuLaw(pcm: number): number {
  muEncodeTable ??= compressTable(muLawCompress);
  return muEncodeTable[pcm & 0xffff]!;
}

/** A-law byte for a 16-bit linear sample (integer in [-32768, 32767]). */
export function linearToALaw(pcm: number): number {
  aEncodeTable ??= compressTable(aLawCompress);
  return aEncodeTable[pcm & 0xffff]!;
}

/** 16-bit linear value of a mu-law byte. */
export function muLawToLinear(byte: number): number {
  return MULAW_TO_LINEAR[byte & 0xff]!;
}

/** 16-bit linear value of an A-law byte. */
export function aLawToLinear(byte: number): number {
  return ALAW_TO_LINEAR[byte & 0xff]!;
}
