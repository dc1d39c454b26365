// AudioWorklet: hands the microphone's samples (at the AudioContext's rate) to the page in 20 ms blocks.
declare const sampleRate: number;
declare function registerProcessor(name: string, ctor: unknown): void;
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
}

class MicTap extends AudioWorkletProcessor {
  private readonly size = Math.round(sampleRate / 50);
  private block = new Float32Array(this.size);
  private filled = 0;
  process(inputs: Float32Array[][]): boolean {
    const channel = inputs[0]?.[0];
    if (!channel) return true;
    for (let i = 0; i < channel.length; i++) {
      this.block[this.filled++] = channel[i] as number;
      if (this.filled === this.block.length) {
        this.port.postMessage(this.block, [this.block.buffer]);
        // The sent block's buffer was transferred (its length is now 0): start a new one of the block size.
        this.block = new Float32Array(this.size);
        this.filled = 0;
      }
    }
    return true;
  }
}
registerProcessor('mic-tap', MicTap);
