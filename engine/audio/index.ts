// Public surface of engine/audio: codecs, resampling, framing, WAV/Opus/Ogg decoding.
export { AudioFormatError } from './errors.js';
export { concatSamples, WIRE_SAMPLE_RATES, type MonoAudio, type WireSampleRate } from './types.js';
export {
  bytesPerSample, decodeALaw, decodeFloat32, decodeLinear16, decodeLinear32, decodeMuLaw, decodeSamples, encodeALaw, encodeFloat32,
  encodeLinear16, encodeLinear32, encodeMuLaw, encodeSamples, ENCODINGS, isEncoding, SampleDecoder, type Encoding,
} from './codecs.js';
export { aLawToLinear, linearToALaw, linearToMuLaw, muLawToLinear } from './g711.js';
export { floatToInt16 } from './pcm.js';
export { resample, Resampler, RESAMPLE_QUALITIES, type ResampleQuality, type ResamplerOptions } from './resample.js';
export { Framer, FRAME_MS, frameSize, splitFrames } from './frames.js';
export { readWav, writeWav, type WavSampleFormat } from './wav.js';
export { decodeOggOpus, decodeOpusPackets, OggOpusDecoder, OpusPacketDecoder, OPUS_RATE, parseOpusHead, type OpusHead } from './opus.js';
export { OggDemuxer, oggCrc, type OggPacket } from './ogg.js';
export { decodeAudio, WIRE_ENCODINGS, type DecodeHint, type DecodedAudio, type WireEncoding } from './decode.js';
export { StreamInput } from './stream-decoder.js';
export { SampleBuffer } from './sample-buffer.js';
