// SVOX Pico through its WASM build (npm @echogarden/svoxpico-wasm, an Emscripten module): one Pico "system" per voice
// (Pico runs one engine per system), each with its language's two resource files copied into the module's in-memory
// file system. Runs on a worker thread (worker.ts): pico_getData is synchronous CPU work.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PICO_SAMPLE_RATE, picoFiles, type PicoVoiceInfo } from './catalog.js';

export const PICO_ENGINE_PACKAGE = '@echogarden/svoxpico-wasm';

/** Where the engine's module is (throws when the npm package is not installed); loads nothing. */
export function resolvePicoEngine(): string {
  return createRequire(import.meta.url).resolve(PICO_ENGINE_PACKAGE);
}

/** The parts of the Emscripten module we use. */
interface PicoModule {
  HEAPU8: Uint8Array;
  FS: { writeFile(path: string, data: Uint8Array): void };
  getValue(ptr: number, type: 'i16' | 'i32'): number;
  setValue(ptr: number, value: number, type: 'i16' | 'i32'): void;
  _malloc(n: number): number;
  _free(p: number): void;
  _pico_initialize(mem: number, size: number, outSystem: number): number;
  _pico_loadResource(system: number, file: number, outResource: number): number;
  _pico_getResourceName(system: number, resource: number, outName: number): number;
  _pico_createVoiceDefinition(system: number, name: number): number;
  _pico_addResourceToVoiceDefinition(system: number, voice: number, resource: number): number;
  _pico_newEngine(system: number, voice: number, outEngine: number): number;
  _pico_putTextUtf8(engine: number, text: number, size: number, outPut: number): number;
  _pico_getData(engine: number, buffer: number, size: number, outBytes: number, outType: number): number;
  _pico_resetEngine(engine: number, mode: number): number;
  _pico_getSystemStatusMessage(system: number, code: number, outMessage: number): number;
}

/** Memory given to each system: pico2wave's size, enough for one language's resources and its engine. */
const SYSTEM_BYTES = 2_500_000;
/** pico_getData: still working / done with the text put so far. */
const STEP_BUSY = 201;
const STEP_IDLE = 200;
const RESET_SOFT = 0x10;
const OUT_BYTES = 4096;

export interface PicoEngine {
  speak(text: string, voiceId: string): Float32Array;
}

/** Loads the WASM module and one system per voice. `dir`: where the language files are. */
export async function openPico(dir: string, voices: readonly PicoVoiceInfo[]): Promise<PicoEngine> {
  const url = resolvePicoEngine();
  const init = ((await import(pathToFileURL(url).href)) as { default: (opts: object) => Promise<PicoModule> }).default;
  // The module finds svoxpico.wasm beside its script and reads it from disk (Node: no fetch).
  const m = await init({ print: () => undefined, printErr: () => undefined, locateFile: (f: string) => path.join(path.dirname(url), f) });
  const cString = (s: string): number => {
    const b = Buffer.from(`${s}\0`, 'utf8');
    const p = m._malloc(b.length);
    m.HEAPU8.set(b, p);
    return p;
  };
  const readCString = (p: number): string => {
    let end = p;
    while (m.HEAPU8[end]) end++;
    return Buffer.from(m.HEAPU8.subarray(p, end)).toString('utf8');
  };
  const word = m._malloc(8);
  const message = m._malloc(200);
  const check = (system: number, rc: number, what: string): void => {
    if (rc === 0) return;
    m._pico_getSystemStatusMessage(system, rc, message);
    throw new Error(`SVOX Pico: ${what} failed (${rc} ${readCString(message)})`);
  };

  const engines = new Map<string, number>();
  for (const v of voices) {
    check(0, m._pico_initialize(m._malloc(SYSTEM_BYTES), SYSTEM_BYTES, word), 'pico_initialize');
    const system = m.getValue(word, 'i32');
    const names: number[] = [];
    for (const file of picoFiles(v)) {
      const inFs = `/${file}`;
      m.FS.writeFile(inFs, readFileSync(path.join(dir, file)));
      check(system, m._pico_loadResource(system, cString(inFs), word), `loading ${file}`);
      const name = m._malloc(64);
      check(system, m._pico_getResourceName(system, m.getValue(word, 'i32'), name), 'pico_getResourceName');
      names.push(name);
    }
    const voiceName = cString(v.id);
    check(system, m._pico_createVoiceDefinition(system, voiceName), 'pico_createVoiceDefinition');
    for (const name of names) check(system, m._pico_addResourceToVoiceDefinition(system, voiceName, name), 'pico_addResourceToVoiceDefinition');
    check(system, m._pico_newEngine(system, voiceName, word), 'pico_newEngine');
    engines.set(v.id, m.getValue(word, 'i32'));
  }

  const put = m._malloc(4);
  const out = m._malloc(OUT_BYTES);
  const got = m._malloc(4);
  const type = m._malloc(4);
  return {
    speak(text: string, voiceId: string): Float32Array {
      const engine = engines.get(voiceId);
      if (engine === undefined) throw new Error(`SVOX Pico has no voice "${voiceId}"`);
      // Null-terminated: the terminator tells Pico the text is complete (it flushes the last sentence).
      const bytes = Buffer.from(`${text}\0`, 'utf8');
      const textPtr = m._malloc(bytes.length);
      m.HEAPU8.set(bytes, textPtr);
      const chunks: Int16Array[] = [];
      let total = 0;
      try {
        for (let at = 0; at < bytes.length; ) {
          m.setValue(put, 0, 'i16');
          const rc = m._pico_putTextUtf8(engine, textPtr + at, Math.min(bytes.length - at, 32767), put);
          if (rc !== 0) throw new Error(`SVOX Pico: pico_putTextUtf8 failed (${rc})`);
          at += m.getValue(put, 'i16');
          for (;;) {
            const step = m._pico_getData(engine, out, OUT_BYTES, got, type);
            const n = m.getValue(got, 'i16');
            if (n > 0) {
              // Copied out of the heap now: the next call reuses the buffer (and the heap may grow).
              const samples = new Int16Array(m.HEAPU8.slice(out, out + n).buffer);
              chunks.push(samples);
              total += samples.length;
            }
            if (step === STEP_IDLE) break;
            if (step !== STEP_BUSY) throw new Error(`SVOX Pico: pico_getData failed (${step})`);
          }
        }
      } catch (err) {
        m._pico_resetEngine(engine, RESET_SOFT);
        throw err;
      } finally {
        m._free(textPtr);
      }
      const samples = new Float32Array(total);
      let i = 0;
      for (const c of chunks) for (const x of c) samples[i++] = x / 32768;
      return samples;
    },
  };
}

export { PICO_SAMPLE_RATE };
