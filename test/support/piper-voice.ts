// A stand-in Piper voice with Piper's exact model signature, generated as ONNX with onnx-proto (tests only):
//   input int64 [1, n], input_lengths int64 [1], scales float32 [3], sid int64 [1] -> output float32 [1, 1, 1, samples]
// Each of the first input_lengths ids becomes floor(HOP * length_scale) samples of value (id + 10 * sid) * noise_scale.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';

const { onnx } = onnxProto;
export const HOP = 64;
export const SAMPLE_RATE = 22050;

const FLOAT = onnx.TensorProto.DataType.FLOAT;
const INT64 = onnx.TensorProto.DataType.INT64;

function valueInfo(name: string, elemType: number, dims: (number | string)[]): OnnxTypes.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function int64Tensor(name: string, values: number[], dims: number[] = [values.length]): OnnxTypes.ITensorProto {
  return { name, dataType: INT64, dims, int64Data: values };
}

function floatTensor(name: string, values: number[], dims: number[] = [values.length]): OnnxTypes.ITensorProto {
  return { name, dataType: FLOAT, dims, floatData: values };
}

function node(opType: string, input: string[], output: string[], attrs: Record<string, number> = {}): OnnxTypes.INodeProto {
  return {
    opType,
    input,
    output,
    name: output[0],
    attribute: Object.entries(attrs).map(([name, i]) => ({ name, type: onnx.AttributeProto.AttributeType.INT, i })),
  };
}

export function buildStandInPiperModel(): Uint8Array {
  const graph: OnnxTypes.IGraphProto = {
    name: 'piper_stand_in',
    input: [
      valueInfo('input', INT64, [1, 'phonemes']),
      valueInfo('input_lengths', INT64, [1]),
      valueInfo('scales', FLOAT, [3]),
      valueInfo('sid', INT64, [1]),
    ],
    output: [valueInfo('output', FLOAT, [1, 1, 1, 'samples'])],
    initializer: [
      int64Tensor('zero', [0]),
      int64Tensor('axis1', [1]),
      int64Tensor('axis2', [2]),
      int64Tensor('idx0', [0], []),
      int64Tensor('idx1', [1], []),
      int64Tensor('one_one', [1, 1]),
      int64Tensor('shape1', [1]),
      int64Tensor('out_shape', [1, 1, 1, -1]),
      floatTensor('ten', [10]),
      floatTensor('hop', [HOP], []),
    ],
    node: [
      node('Slice', ['input', 'zero', 'input_lengths', 'axis1'], ['ids']),
      node('Cast', ['ids'], ['ids_f'], { to: FLOAT }),
      node('Cast', ['sid'], ['sid_f'], { to: FLOAT }),
      node('Mul', ['sid_f', 'ten'], ['sid_offset']),
      node('Add', ['ids_f', 'sid_offset'], ['base']),
      node('Gather', ['scales', 'idx0'], ['noise_scale']),
      node('Mul', ['base', 'noise_scale'], ['values']),
      node('Unsqueeze', ['values', 'axis2'], ['values3']),
      node('Gather', ['scales', 'idx1'], ['length_scale']),
      node('Mul', ['length_scale', 'hop'], ['frame_f']),
      node('Floor', ['frame_f'], ['frame_floor']),
      node('Cast', ['frame_floor'], ['frame_i'], { to: INT64 }),
      node('Reshape', ['frame_i', 'shape1'], ['frame_1']),
      node('Concat', ['one_one', 'frame_1'], ['expand_shape'], { axis: 0 }),
      node('Expand', ['values3', 'expand_shape'], ['expanded']),
      node('Reshape', ['expanded', 'out_shape'], ['output']),
    ],
  };
  const model: OnnxTypes.IModelProto = {
    irVersion: 8,
    producerName: 'parley-test',
    opsetImport: [{ domain: '', version: 13 }],
    graph,
  };
  return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
}

const PHONEME_ID_MAP: Record<string, number[]> = {
  _: [0],
  '^': [1],
  $: [2],
  ' ': [3],
  '.': [4],
  ',': [5],
  '?': [6],
  '!': [7],
  h: [20],
  ə: [21],
  l: [22],
  ˈ: [23],
  o: [24],
  ʊ: [25],
  w: [26],
  ɜ: [27],
  ː: [28],
  d: [29],
};

export const VOICE_JSON = {
  dataset: 'stand-in',
  audio: { sample_rate: SAMPLE_RATE, quality: 'x_low' },
  espeak: { voice: 'en-us' },
  language: { code: 'en_US' },
  inference: { noise_scale: 0.5, length_scale: 1, noise_w: 0.8 },
  phoneme_type: 'espeak',
  phoneme_map: {},
  phoneme_id_map: PHONEME_ID_MAP,
  num_symbols: 256,
  num_speakers: 2,
  speaker_id_map: { alice: 0, bob: 1 },
  piper_version: '1.0.0',
};

/** Writes the stand-in as `voice.onnx` + `voice.onnx.json` into `dir`. */
export async function writeStandInVoice(dir: string): Promise<void> {
  await writeFile(path.join(dir, 'voice.onnx'), buildStandInPiperModel());
  await writeFile(path.join(dir, 'voice.onnx.json'), JSON.stringify(VOICE_JSON));
}
