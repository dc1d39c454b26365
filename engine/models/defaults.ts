// Recognition defaults shared by the model registry and the server's settings (kept import-free so that loading
// the settings does not load onnxruntime). See RegistryOptions in registry.ts for what each means.
export const STT_DEFAULTS = { beams: 5, liveBeams: 1, threads: 2 } as const;
