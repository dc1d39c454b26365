// RNNoise for SIP trunks' noiseSuppression: the engine's NoiseSuppressor (engine/audio/denoise.ts) on 8 kHz 20 ms frames.
export { NoiseSuppressor, type NoiseSuppressorOptions } from '../../engine/audio/denoise.js';
