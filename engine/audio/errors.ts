// The one error type thrown for audio input that cannot be decoded (bad container, codec data or parameters).

/** Thrown for every undecodable audio input in engine/audio; `format` names what was being decoded. */
export class AudioFormatError extends Error {
  override readonly name = 'AudioFormatError';
  constructor(
    message: string,
    readonly format?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Formats a caught value as a short reason for an AudioFormatError message. */
export function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
