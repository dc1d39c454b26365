// GPT-2 byte-level BPE decoding of Whisper token ids to text, using the vocabulary taken from the model.

/** Vocabulary as extracted from the model's BpeDecoder node (stored as JSON in the model cache). */
export interface WhisperVocab {
  /** Byte-level token strings; index = token id. */
  idVocab: string[];
  /** Unicode code point (as a decimal string) -> byte value. */
  byteDecoder: Record<string, number>;
  /** Token id (as a decimal string) -> text, for special/language/task/timestamp tokens. */
  addedTokens: Record<string, string>;
  /** Ids the original decoder skipped as special. */
  specialIds: number[];
}

export interface DecodeOptions {
  /** Skip special, language, task and timestamp tokens (default true). */
  skipSpecial?: boolean;
}

export class WhisperTokenizer {
  readonly eot: number;
  readonly sot: number;
  private readonly tokenBytes: Uint8Array[];
  private readonly added: Map<number, string>;
  private readonly special: Set<number>;
  private readonly utf8 = new TextDecoder('utf-8');

  constructor(vocab: WhisperVocab) {
    const byteOf = new Map<number, number>();
    for (const [cp, b] of Object.entries(vocab.byteDecoder)) byteOf.set(Number(cp), b);
    this.tokenBytes = vocab.idVocab.map((tok) => {
      const out: number[] = [];
      for (const ch of tok) {
        const b = byteOf.get(ch.codePointAt(0) ?? -1);
        if (b === undefined) return new TextEncoder().encode(tok); // not byte-level: keep as text
        out.push(b);
      }
      return Uint8Array.from(out);
    });
    this.added = new Map(Object.entries(vocab.addedTokens).map(([id, t]) => [Number(id), t]));
    this.special = new Set([...vocab.specialIds, ...this.added.keys()]);
    this.eot = this.idOf('<|endoftext|>') ?? 50256;
    this.sot = this.idOf('<|startoftranscript|>') ?? 50257;
  }

  /** Id of an added (special) token by its text, e.g. '<|notimestamps|>'. */
  idOf(text: string): number | undefined {
    for (const [id, t] of this.added) if (t === text) return id;
    return undefined;
  }

  /** True for special, language, task and timestamp tokens and for ids outside the vocabulary. */
  isSpecial(id: number): boolean {
    return this.special.has(id) || id < 0 || id >= this.tokenBytes.length;
  }

  /** The raw token string (byte-level form, or the added token's text), for debugging. */
  tokenText(id: number): string | undefined {
    return this.added.get(id) ?? this.tokenBytesText(id);
  }

  /** Decode ids to text (not trimmed: Whisper words carry their leading space). */
  decode(ids: ArrayLike<number>, opts: DecodeOptions = {}): string {
    const skip = opts.skipSpecial ?? true;
    const parts: Uint8Array[] = [];
    let len = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      if (this.isSpecial(id)) {
        const t = this.added.get(id);
        if (!skip && t !== undefined) {
          const b = new TextEncoder().encode(t);
          parts.push(b);
          len += b.length;
        }
        continue;
      }
      const b = this.tokenBytes[id];
      if (!b) continue;
      parts.push(b);
      len += b.length;
    }
    const all = new Uint8Array(len);
    let o = 0;
    for (const p of parts) {
      all.set(p, o);
      o += p.length;
    }
    return this.utf8.decode(all);
  }

  private tokenBytesText(id: number): string | undefined {
    const b = this.tokenBytes[id];
    return b ? this.utf8.decode(b) : undefined;
  }
}
