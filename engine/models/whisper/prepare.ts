// Turns the speech-transcriber Whisper graph into one onnxruntime-node can load (BpeDecoder removed) and caches it.
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import type { WhisperVocab } from './tokenizer.js';

const { onnx } = onnxProto;

/** Bump when the edit or the vocab format changes so old cache entries are ignored. */
const PREPARE_FORMAT = 1;
const CONTRIB_DOMAIN = 'ai.onnx.contrib';

export interface PrepareWhisperOptions {
  /** Source model; defaults to speech-transcriber's dist/model/whisper_cpu_int8_0_model.onnx. */
  sourcePath?: string;
  /** Cache directory; defaults to `<os.tmpdir()>/parley-models`. */
  cacheDir?: string;
}

export interface PreparedWhisperModel {
  modelPath: string;
  vocabPath: string;
  /** True when this call wrote the cache entry, false when an existing one was reused. */
  built: boolean;
}

export function defaultWhisperSourcePath(): string {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('speech-transcriber/package.json');
  return path.join(path.dirname(pkg), 'dist', 'model', 'whisper_cpu_int8_0_model.onnx');
}

export function defaultModelCacheDir(): string {
  return path.join(os.tmpdir(), 'parley-models');
}

/** Return cached edited model + vocab for the source file, building them if the source changed. */
export async function prepareWhisperModel(opts: PrepareWhisperOptions = {}): Promise<PreparedWhisperModel> {
  const sourcePath = opts.sourcePath ?? defaultWhisperSourcePath();
  const cacheDir = opts.cacheDir ?? defaultModelCacheDir();
  const st = await fs.stat(sourcePath);
  const key = `v${PREPARE_FORMAT}-${st.size}-${Math.floor(st.mtimeMs)}`;
  const base = path.join(cacheDir, `whisper-tiny-en-int8-${key}`);
  const modelPath = `${base}.onnx`;
  const vocabPath = `${base}.vocab.json`;
  if ((await exists(modelPath)) && (await exists(vocabPath))) return { modelPath, vocabPath, built: false };

  const { model, vocab } = editWhisperModel(await fs.readFile(sourcePath));
  await fs.mkdir(cacheDir, { recursive: true });
  // Each file appears atomically (temp + rename); concurrent builders write identical content.
  await writeAtomic(vocabPath, JSON.stringify(vocab));
  await writeAtomic(modelPath, model);
  return { modelPath, vocabPath, built: true };
}

/** The graph edit itself: drop BpeDecoder + its Cast, output int32 `sequences`, return the vocabulary. */
export function editWhisperModel(source: Uint8Array): { model: Uint8Array; vocab: WhisperVocab } {
  const model = onnx.ModelProto.decode(source);
  const graph = model.graph;
  if (!graph?.node) throw new Error('whisper model: no graph');
  const nodes = graph.node;
  const bpeIndex = nodes.findIndex((n) => n.opType === 'BpeDecoder');
  const bpe = nodes[bpeIndex];
  if (!bpe) throw new Error('whisper model: no BpeDecoder node (already edited?)');
  const castOut = bpe.input?.[0];
  const castIndex = nodes.findIndex((n) => n.opType === 'Cast' && n.output?.[0] === castOut);
  const sequences = nodes[castIndex]?.input?.[0];
  if (!castOut || !sequences) throw new Error('whisper model: no Cast feeding BpeDecoder');

  const vocab = vocabFromAttributes(bpe.attribute ?? []);
  graph.node = nodes.filter((_, i) => i !== bpeIndex && i !== castIndex);
  if (graph.node.some((n) => n.domain === CONTRIB_DOMAIN)) throw new Error('whisper model: other ai.onnx.contrib nodes remain');
  graph.output = [
    onnx.ValueInfoProto.create({
      name: sequences,
      type: onnx.TypeProto.create({
        tensorType: onnx.TypeProto.Tensor.create({
          elemType: onnx.TensorProto.DataType.INT32,
          shape: onnx.TensorShapeProto.create({
            dim: ['batch_size', 'num_return_sequences', 'sequence_length'].map((dimParam) =>
              onnx.TensorShapeProto.Dimension.create({ dimParam }),
            ),
          }),
        }),
      }),
    }),
  ];
  model.opsetImport = model.opsetImport.filter((o) => o.domain !== CONTRIB_DOMAIN);
  return { model: onnx.ModelProto.encode(model).finish(), vocab };
}

function vocabFromAttributes(attrs: OnnxTypes.IAttributeProto[]): WhisperVocab {
  const str = (name: string): string => {
    const a = attrs.find((x) => x.name === name);
    if (!a?.s) throw new Error(`whisper model: BpeDecoder has no string attribute ${name}`);
    return Buffer.from(a.s).toString('utf8');
  };
  // id_vocab: one byte-level token a line, line number = token id.
  const idVocab = str('id_vocab').split('\n');
  // byte_decoder: "<unicode code point>\t<byte>" a line.
  const byteDecoder: Record<string, number> = {};
  for (const line of str('byte_decoder').split('\n')) {
    const [cp, b] = line.split('\t');
    if (cp && b) byteDecoder[cp] = Number(b);
  }
  // added_tokens: "<id>\t<text>" a line (special, language, task and timestamp tokens).
  const addedTokens: Record<string, string> = {};
  for (const line of str('added_tokens').split('\n')) {
    const tab = line.indexOf('\t');
    if (tab > 0) addedTokens[line.slice(0, tab)] = line.slice(tab + 1);
  }
  // all_special_ids: one id a line.
  const specialIds = str('all_special_ids')
    .split('\n')
    .filter((s) => s.trim() !== '')
    .map(Number);
  if (idVocab.length < 50000 || Object.keys(byteDecoder).length !== 256) {
    throw new Error('whisper model: unexpected vocabulary format');
  }
  return { idVocab, byteDecoder, addedTokens, specialIds };
}

async function exists(p: string): Promise<boolean> {
  try {
    await fs.access(p);
    return true;
  } catch {
    return false;
  }
}

async function writeAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await fs.writeFile(tmp, data);
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}
