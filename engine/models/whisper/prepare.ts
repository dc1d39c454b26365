// Turns the speech-transcriber Whisper graph into one onnxruntime-node can load (BpeDecoder removed), with the
// encoder window as an input, and caches it.
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import type { WhisperVocab } from './tokenizer.js';

const { onnx } = onnxProto;

/** Bump when the edit or the vocab format changes so old cache entries are ignored. 2: the `window_frames` input. */
const PREPARE_FORMAT = 2;
const CONTRIB_DOMAIN = 'ai.onnx.contrib';
/** Log-mel frames of Whisper's own 30 s window (hop 160 at 16 kHz); the encoder halves them to 1500 positions. */
export const WHISPER_FULL_WINDOW = 3000;

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

/**
 * The graph edit itself: drop BpeDecoder + its Cast, output int32 `sequences`, return the vocabulary; with `window`
 * (default true) the encoder window becomes the input `window_frames` (see addWindowInput). `window: false` gives the
 * graph before that edit (bench/whisper-batch.ts runs it as the reference).
 */
export function editWhisperModel(source: Uint8Array, opts: { window?: boolean } = {}): { model: Uint8Array; vocab: WhisperVocab } {
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
  if (opts.window ?? true) addWindowInput(graph);
  return { model: onnx.ModelProto.encode(model).finish(), vocab };
}

/**
 * Whisper's graph pads the log-mel to a constant 3000 frames, so a 1 s clip costs the encoder as much as a 29 s one.
 * This makes that constant the input `window_frames` (int64 scalar, even, at least the clip's frames) and slices
 * the encoder's positional embedding [1500, 384] to the encoder's length (whisper.cpp's audio_ctx), so a shorter
 * window runs a shorter encoder; with 3000 the graph computes what it did before. Which window a clip gets is
 * recognizer.ts's encoderWindow.
 */
function addWindowInput(graph: OnnxTypes.IGraphProto): void {
  const nodes = graph.node ?? [];
  // The 3000 the log-mel is padded to: a scalar int64 Constant feeding a Sub.
  const windowConst = nodes.filter((n) => n.opType === 'Constant' && int64Scalar(n) === WHISPER_FULL_WINDOW);
  const windowOut = windowConst[0]?.output?.[0];
  const consumers = nodes.filter((n) => windowOut && n.input?.includes(windowOut));
  if (windowConst.length !== 1 || !windowOut || consumers.length !== 1 || consumers[0]?.opType !== 'Sub') throw new Error('whisper model: expected one constant 3000 feeding a Sub');
  graph.node = nodes.filter((n) => n !== windowConst[0]);
  consumers[0].input = consumers[0].input!.map((i) => (i === windowOut ? 'window_frames' : i));
  graph.input = [
    ...(graph.input ?? []),
    onnx.ValueInfoProto.create({
      name: 'window_frames',
      type: onnx.TypeProto.create({ tensorType: onnx.TypeProto.Tensor.create({ elemType: onnx.TensorProto.DataType.INT64, shape: onnx.TensorShapeProto.create({ dim: [] }) }) }),
    }),
  ];

  const beam = graph.node.find((n) => n.opType === 'BeamSearch');
  const encoder = beam?.attribute?.find((a) => a.name === 'encoder')?.g;
  const decoder = beam?.attribute?.find((a) => a.name === 'decoder')?.g;
  if (!encoder?.node || !decoder) throw new Error('whisper model: no BeamSearch encoder/decoder subgraphs');
  const posName = encoder.initializer?.find((t) => t.name?.endsWith('encoder.embed_positions.weight'))?.name;
  const addIndex = encoder.node.findIndex((n) => n.opType === 'Add' && posName && n.input?.includes(posName));
  const add = encoder.node[addIndex];
  const hidden = add?.input?.find((i) => i !== posName);
  if (!posName || !add || !hidden) throw new Error('whisper model: no Add of the encoder positional embedding');
  // pos[0 : hidden.shape[1]] (hidden: [batch, window / 2, 384]).
  encoder.initializer!.push(onnx.TensorProto.create({ name: 'parley_zero', dataType: onnx.TensorProto.DataType.INT64, dims: [1], int64Data: [0] }));
  const slice = [
    onnx.NodeProto.create({ opType: 'Shape', name: 'parley_pos_len', input: [hidden], output: ['parley_pos_len_out'], attribute: [
      onnx.AttributeProto.create({ name: 'start', type: onnx.AttributeProto.AttributeType.INT, i: 1 }),
      onnx.AttributeProto.create({ name: 'end', type: onnx.AttributeProto.AttributeType.INT, i: 2 }),
    ] }),
    onnx.NodeProto.create({ opType: 'Slice', name: 'parley_pos_slice', input: [posName, 'parley_zero', 'parley_pos_len_out', 'parley_zero'], output: ['parley_pos_sliced'] }),
  ];
  add.input = add.input!.map((i) => (i === posName ? 'parley_pos_sliced' : i));
  encoder.node.splice(addIndex, 0, ...slice);
  // The subgraphs declare 3000 frames / 1500 encoder positions; make those symbolic and drop the stored
  // intermediate shapes (onnxruntime re-infers them), else loading fails shape inference.
  for (const g of [encoder, decoder]) {
    for (const v of [...(g.input ?? []), ...(g.output ?? [])]) {
      for (const d of v.type?.tensorType?.shape?.dim ?? []) {
        const n = Number(d.dimValue ?? 0);
        if (n === WHISPER_FULL_WINDOW || n === WHISPER_FULL_WINDOW / 2) {
          d.dimValue = null;
          d.dimParam = n === WHISPER_FULL_WINDOW ? 'window_frames' : 'encoder_length';
        }
      }
    }
    g.valueInfo = [];
  }
}

function int64Scalar(n: OnnxTypes.INodeProto): number | undefined {
  const t = n.attribute?.[0]?.t;
  if (!t || t.dataType !== onnx.TensorProto.DataType.INT64 || (t.dims ?? []).length !== 0) return undefined;
  if (t.rawData && t.rawData.length === 8) return Number(Buffer.from(t.rawData).readBigInt64LE());
  const v = t.int64Data?.[0];
  return v === undefined ? undefined : Number(v);
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
