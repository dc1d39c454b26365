// The settings schema (server/settings-schema.ts): one declaration per environment variable, start-up refusals that
// name the variable (an unknown PARLEY_* name with its nearest setting, a removed setting, a bad value), and
// docs/settings.md generated from it. No server: loadSettings is called directly.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../server/settings.js';
import { HARNESS, REMOVED, SETTINGS, editDistance, nearestSetting } from '../server/settings-schema.js';
import { SETTINGS_DOC, settingsMarkdown } from '../server/settings-docs.js';
import { tracesUrl } from '../server/tracing.js';

const ROOT = path.resolve(import.meta.dirname, '..');

describe('settings schema', () => {
  it('docs/settings.md is what the schema generates (run `npm run docs:settings` after changing a setting)', () => {
    expect(readFileSync(SETTINGS_DOC, 'utf8')).toBe(settingsMarkdown());
  });

  it('refuses an unknown PARLEY_* variable, naming the nearest setting; other variables are not ours', () => {
    expect(() => loadSettings({ PARLEY_RATE_LIMIT_PER_MINUT: '100' })).toThrow(
      'PARLEY_RATE_LIMIT_PER_MINUT is not a setting; did you mean PARLEY_RATE_LIMIT_PER_MINUTE?',
    );
    expect(() => loadSettings({ PARLEY_SIP_PUBLIC_ADDR: '203.0.113.5' })).toThrow('did you mean PARLEY_SIP_PUBLIC_ADDRESS?');
    // Even empty: a misspelt name is a mistake whatever its value.
    expect(() => loadSettings({ PARLEY_WARM_MODEL: '' })).toThrow('did you mean PARLEY_WARM_MODELS?');
    expect(nearestSetting('PARLEY_MAX_SPEECH_SESION')).toBe('PARLEY_MAX_SPEECH_SESSIONS');
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(() => loadSettings({ PATH: '/usr/bin', NODE_ENV: 'production', PARLEY_TEST_TIER: 'unit', PARLEY_SERVER_NODE_FLAGS: '--cpu-prof' })).not.toThrow();
  });

  it('refuses a bad value naming the variable and what it allows, and lists every problem at once', () => {
    expect(() => loadSettings({ PARLEY_RATE_LIMIT_PER_MINUTE: 'lots' })).toThrow('PARLEY_RATE_LIMIT_PER_MINUTE must be an integer >= 1');
    expect(() => loadSettings({ PARLEY_INFERENCE_NICE: '20' })).toThrow('PARLEY_INFERENCE_NICE must be 0-19');
    expect(() => loadSettings({ PARLEY_WARM_MODELS: 'maybe' })).toThrow('PARLEY_WARM_MODELS must be 1 or 0');
    expect(() => loadSettings({ LOG_LEVEL: 'verbose' })).toThrow('LOG_LEVEL must be fatal, error, warn, info, debug, trace, silent');
    expect(() => loadSettings({ PARLEY_ATOMS_PREFIX: 'atoms' })).toThrow('PARLEY_ATOMS_PREFIX must look like /name/v1');
    expect(() => loadSettings({ PARLEY_LLM_BASE_URL: 'localhost:11434' })).toThrow('PARLEY_LLM_BASE_URL must be an http or https URL');
    expect(() => loadSettings({ PARLEY_REDIS_URL: '127.0.0.1:6379' })).toThrow('PARLEY_REDIS_URL must be a redis or rediss URL');
    let message = '';
    try {
      loadSettings({ PORT: '-1', PARLEY_SIP_HOST: 'localhost', PARLEY_REGON: 'eu' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message.split('\n')).toEqual([
      'PARLEY_REGON is not a setting; did you mean PARLEY_REGION? (docs/settings.md lists them all)',
      'PORT must be an integer >= 0',
      'PARLEY_SIP_HOST must be an IPv4 address such as 0.0.0.0',
    ]);
  });

  it('refuses a removed setting that is set, saying what happens now; empty counts as unset', () => {
    expect(() => loadSettings({ PARLEY_INFERENCE_SCHEDULER: 'fifo' })).toThrow('PARLEY_INFERENCE_SCHEDULER was removed: waiting inference jobs are always served by priority');
    expect(() => loadSettings({ PARLEY_MEDIA_THREAD: 'worker' })).toThrow('PARLEY_MEDIA_THREAD was removed');
    expect(() => loadSettings({ PARLEY_S2S_MAX_SESSIONS: '4' })).toThrow('PARLEY_S2S_MAX_SESSIONS was removed: speech-to-speech sessions count against PARLEY_MAX_SPEECH_SESSIONS');
    expect(() => loadSettings({ PARLEY_S2S_MAX_SESSIONS: '' })).not.toThrow();
  });

  it('builds Settings from the defaults, each field filled once', () => {
    const s = loadSettings({ PARLEY_DATA_DIR: '/tmp/parley-data' });
    expect(s).toMatchObject({
      host: '0.0.0.0', port: 8080, dataDir: '/tmp/parley-data', atomsPrefix: '/atoms/v1', wavesPrefix: '/waves/v1', maxBodyBytes: 1048576,
      rateLimitPerMinute: 600, region: 'local', tokenMintsPerMinute: 60, warmModels: true, inferenceConcurrency: 2, inferenceQueue: 16,
      sttMaxBytes: 64 * 1024 * 1024, sttMaxSeconds: 600, sttBeams: 5, sttLiveBeams: 1, sttThreads: 2, sttShortWindow: 'busy', inferenceNice: 10,
      keyCacheMs: 3000, sessionTtlSeconds: 12 * 3600, scanBudgetMs: 200, scanTimeoutMs: 30_000, shutdownTimeoutMs: 10_000, logLevel: 'info',
      s2sToolTimeoutMs: 15_000, sessionCaps: { speech: { server: 16, perOwner: 6 }, chat: { server: 128, perOwner: 32 } }, sttIdleSeconds: 60,
      allowPrivateEgress: false, webhookTimeoutMs: 30_000, webhookPollMs: 1000, webhookConcurrency: 8, outboundQueue: 1000,
      outboundRingSecs: 60, outboundLeaseSecs: 30, campaignMinuteMs: 60_000,
    });
    expect(s.llm).toBeUndefined();
    expect(s.recordingStore).toBeUndefined();
    expect(new Set(SETTINGS.map((x) => x.field)).size).toBe(SETTINGS.length);
    expect(loadSettings({ PARLEY_LLM_BASE_URL: 'http://127.0.0.1:11434/v1/', PARLEY_WARM_MODELS: 'false', PARLEY_ALLOW_PRIVATE_EGRESS: 'yes' })).toMatchObject({
      llm: { baseUrl: 'http://127.0.0.1:11434/v1', model: 'gpt-4o-mini', apiKey: undefined },
      warmModels: false,
      allowPrivateEgress: true,
    });
  });

  it('reads the OpenTelemetry variables as the SDK does: traces off unless an endpoint is set; headers never echoed', () => {
    expect(loadSettings({}).traces).toEqual({ endpoint: undefined, tracesEndpoint: undefined, serviceName: 'parley', headers: {} });
    expect(tracesUrl(loadSettings({}).traces)).toBeNull();
    expect(tracesUrl(loadSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).traces)).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl(loadSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.com/base/' }).traces)).toBe('https://otlp.example.com/base/v1/traces');
    expect(tracesUrl(loadSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/spans' }).traces)).toBe('http://b:4318/spans');
    expect(loadSettings({ OTEL_SERVICE_NAME: 'voice-eu', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc%3D%3D, Authorization=Basic%20dXNlcjpwYXNz;meta' }).traces).toMatchObject({
      serviceName: 'voice-eu',
      headers: { 'x-api-key': 'abc==', Authorization: 'Basic dXNlcjpwYXNz' },
    });
    expect(() => loadSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow('OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL');
    let refusal = '';
    try {
      loadSettings({ OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=ok,s3cr3t-token' });
    } catch (err) {
      refusal = (err as Error).message;
    }
    expect(refusal).toContain('OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs');
    expect(refusal).not.toContain('s3cr3t');
  });

  it('every PARLEY_* name the tests and benches use is a setting, a harness variable, or (in refusal tests only) a removed one', () => {
    const walk = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const p = path.join(dir, name);
        return statSync(p).isDirectory() ? walk(p) : /\.(ts|mjs)$/.test(p) ? [p] : [];
      });
    const known = new Set([...SETTINGS.map((s) => s.name), ...Object.keys(HARNESS)]);
    const unknown: string[] = [];
    const removedUse: string[] = [];
    for (const file of [...walk(path.join(ROOT, 'test')), ...walk(path.join(ROOT, 'bench'))]) {
      const rel = path.relative(ROOT, file);
      if (rel === 'test/settings_schema.test.ts') continue; // misspells names on purpose
      for (const [name] of readFileSync(file, 'utf8').matchAll(/\bPARLEY_[A-Z0-9_]*[A-Z0-9]\b/g)) {
        if (Object.hasOwn(REMOVED, name)) {
          if (rel !== 'test/sip_stack.test.ts') removedUse.push(`${rel}: ${name}`);
        } else if (!known.has(name) && !SETTINGS.some((s) => s.name.startsWith(`${name}_`))) {
          unknown.push(`${rel}: ${name}`);
        }
      }
    }
    expect(unknown).toEqual([]);
    expect(removedUse).toEqual([]);
  });
});
