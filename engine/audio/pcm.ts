// Linear PCM <-> Float32: int16 LE (linear16), int32 LE (linear32) and float32 LE, with clipping on encode.

/** Float sample in [-1, 1] -> int16 (x * 32768, rounded, clipped to [-32768, 32767]; NaN -> 0). */
export function floatToInt16(x: number): number {
  const v = Math.round(x * 32768);
  if (v > 32767) return 32767;
  if (v < -32768) return -32768;
  return v || 0; // NaN (and -0) -> 0
}

/** Float sample in [-1, 1] -> int32 (x * 2^31, rounded, clipped; NaN -> 0). */
export function floatToInt32(x: number): number {
  const v = Math.round(x * 2147483648);
  if (v > 2147483647) return 2147483647;
  if (v < -2147483648) return -2147483648;
  return v || 0;
}

/** int16 LE bytes -> Float32 (v / 32768). A trailing odd byte is ignored (use SampleDecoder to carry it). */
export function decodeLinear16(buf: Uint8Array): Float32Array {
  const n = buf.length >> 1;
  const out = new Float32Array(n);
  for (let i = 0, o = 0; i < n; i++, o += 2) out[i] = (((buf[o + 1]! << 24) | (buf[o]! << 16)) >> 16) / 32768;
  return out;
}

/** Float32 -> int16 LE bytes (clipped). */
export function encodeLinear16(samples: Float32Array): Buffer {
  const out = Buffer.allocUnsafe(samples.length * 2);
  for (let i = 0, o = 0; i < samples.length; i++, o += 2) {
    const v = floatToInt16(samples[i]!);
    out[o] = v & 0xff;
    out[o + 1] = (v >> 8) & 0xff;
  }
  return out;
}

/** int32 LE bytes -> Float32 (v / 2^31). Trailing bytes that do not fill a sample are ignored. */
export function decodeLinear32(buf: Uint8Array): Float32Array {
  const n = buf.length >> 2;
  const out = new Float32Array(n);
  for (let i = 0, o = 0; i < n; i++, o += 4) {
    const v = buf[o]! | (buf[o + 1]! << 8) | (buf[o + 2]! << 16) | (buf[o + 3]! << 24);
    out[i] = v / 2147483648;
  }
  return out;
}

/** Float32 -> int32 LE bytes (clipped). */
export function encodeLinear32(samples: Float32Array): Buffer {
  const out = Buffer.allocUnsafe(samples.length * 4);
  for (let i = 0; i < samples.length; i++) out.writeInt32LE(floatToInt32(samples[i]!), i * 4);
  return out;
}

/** float32 LE bytes -> Float32, clamped to [-1, 1], non-finite -> 0. Trailing partial sample ignored. */
export function decodeFloat32(buf: Uint8Array): Float32Array {
  const n = buf.length >> 2;
  const out = new Float32Array(n);
  const view = new DataView(buf.buffer, buf.byteOffset, n * 4);
  for (let i = 0; i < n; i++) {
    const v = view.getFloat32(i * 4, true);
    out[i] = v > 1 ? 1 : v < -1 ? -1 : v || 0;
  }
  return out;
}

/** Float32 -> float32 LE bytes (clamped to [-1, 1]). */
export function encodeFloat32(samples: Float32Array): Buffer {
  const out = Buffer.allocUnsafe(samples.length * 4);
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i]!;
    out.writeFloatLE(v > 1 ? 1 : v < -1 ? -1 : v || 0, i * 4);
  }
  return out;
}

/** int24 LE bytes -> Float32 (v / 2^23). Trailing partial sample ignored. */
export function decodeLinear24(buf: Uint8Array): Float32Array {
  const n = Math.floor(buf.length / 3);
  const out = new Float32Array(n);
  for (let i = 0, o = 0; i < n; i++, o += 3) {
    const v = ((buf[o]! << 8) | (buf[o + 1]! << 16) | (buf[o + 2]! << 24)) >> 8;
    out[i] = v / 8388608;
  }
  return out;
}

/** Float32 -> int24 LE bytes (x * 2^23, rounded, clipped). */
export function encodeLinear24(samples: Float32Array): Buffer {
  const out = Buffer.allocUnsafe(samples.length * 3);
  for (let i = 0, o = 0; i < samples.length; i++, o += 3) {
    const v = Math.max(-8388608, Math.min(8388607, Math.round(samples[i]! * 8388608) || 0));
    out[o] = v & 0xff;
    out[o + 1] = (v >> 8) & 0xff;
    out[o + 2] = (v >> 16) & 0xff;
  }
  return out;
}

/** Unsigned 8-bit PCM (WAV's 8-bit format, 128 = silence) -> Float32. */
export function decodeUnsigned8(buf: Uint8Array): Float32Array {
  const out = new Float32Array(buf.length);
  for (let i = 0; i < buf.length; i++) out[i] = (buf[i]! - 128) / 128;
  return out;
}

/** float64 LE bytes -> Float32, clamped to [-1, 1], non-finite -> 0. */
export function decodeFloat64(buf: Uint8Array): Float32Array {
  const n = buf.length >> 3;
  const out = new Float32Array(n);
  const view = new DataView(buf.buffer, buf.byteOffset, n * 8);
  for (let i = 0; i < n; i++) {
    const v = view.getFloat64(i * 8, true);
    out[i] = v > 1 ? 1 : v < -1 ? -1 : v || 0;
  }
  return out;
}

/** Averages interleaved channels into one (a no-op copy-free return for mono). */
export function mixToMono(interleaved: Float32Array, channels: number): Float32Array {
  if (channels === 1) return interleaved;
  const n = Math.floor(interleaved.length / channels);
  const out = new Float32Array(n);
  for (let i = 0, o = 0; i < n; i++) {
    let s = 0;
    for (let c = 0; c < channels; c++, o++) s += interleaved[o]!;
    out[i] = s / channels;
  }
  return out;
}
