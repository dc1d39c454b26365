// Keypresses (DTMF) in a conversation: a user turn whose text names the keys, so every brain and transcript sees
// them; and the collector that gathers a caller's digits into one entry (a pause or `#` ends it).

/** Keys of a telephone keypad (RFC 4733 events 0-15). */
export const KEYPAD = /^[0-9*#A-D]+$/;

/** The user turn a keypress becomes: `(pressed 1)`, `(pressed 1234#)`. */
export const keypressText = (keys: string): string => `(pressed ${keys})`;

/** The keys a user turn pressed, or null when it is not a keypress. */
export function pressedKeys(text: string): string | null {
  const m = /^\(pressed ([0-9*#A-D]+)\)$/.exec(text.trim());
  return m ? (m[1] as string) : null;
}

/** How long after a key the entry is complete when no other key follows. */
export const KEY_GAP_MS = 700;

/** Gathers keys into entries: `#` ends one at once, otherwise a pause of `gapMs`. */
export class KeypadCollector {
  private keys = '';
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly onEntry: (keys: string) => void,
    private readonly gapMs = KEY_GAP_MS,
  ) {}

  press(key: string): void {
    if (!KEYPAD.test(key)) return;
    this.keys += key;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (key === '#' || this.keys.length >= 32) this.flush();
    else this.timer = setTimeout(() => this.flush(), this.gapMs);
  }

  /** Ends the current entry now (if any). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const keys = this.keys;
    this.keys = '';
    if (keys) this.onEntry(keys);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.keys = '';
  }
}
