// Types for @echogarden/rnnoise-wasm (ships none): the Emscripten module factory; denoise.ts types what it uses.
declare module '@echogarden/rnnoise-wasm' {
  const RNNoise: () => Promise<unknown>;
  export default RNNoise;
}
