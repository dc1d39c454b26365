import { defineConfig } from 'vitest/config';

// Three tiers of test files (docs/testing.md). Each file that needs a server starts its own real server process(es);
// forks keep native modules out of worker threads.
//  - unit: no server, no peers, no database (`npm run test:unit`, the inner loop).
//  - shared: servers, peers and databases, two files at a time. Every file has its own store (a temp dir, a private
//    PostgreSQL schema), its own random ports and loopback addresses for peers, so two files never meet; most of
//    their time is waiting on real-time audio and timers, not CPU (one file at a time kept the 2 cores 31% busy).
//  - timing: files that assert on send timing, pace or event-loop latency, or keep counts in the shared Redis; they
//    run after the others, one at a time, on a machine nothing else in the run loads.

/** Files that need no server, no peer and no database. */
export const UNIT = [
  'agent_brains', 'agent_messages', 'agent_turn_taking', 'ambience', 'audio_codecs', 'audio_containers', 'audio_frames', 'audio_resample',
  'engine_queue', 'kb_chunking', 'layers', 'media_profile', 'llm_models', 'live_event_queue', 'loop_reservations', 'prompt_score', 'redaction', 'rtp_clock', 'rtp_sdp', 'rtp_packets', 'rtp_sendpool',
  'sdp_media_policy', 'security_scan', 'session_reservations', 'settings_schema', 'speech_text', 'stt_live_engine', 'stt_whisper', 'tools_api_call', 'tts_chunker', 'tts_flite',
  'tts_flite_text', 'tts_pico', 'tts_piper', 'tts_rhvoice', 'turn_behaviour', 'turn_end_of_turn', 'vad_silero', 'variable_extraction_values', 'voice_table',
];

/**
 * Files that run alone: RTP send timing and the media worker, the outbound pace, the inference scheduler's order, the
 * INVITE flood, SIP transaction timers, seconds-long idle timeouts against session caps (hostile_clients: with two files
 * at a time a held socket timed out and let a session past the server's cap), a kill -9 in the middle of calls, and
 * the files whose servers share Redis-held counts (digest limits, the pace).
 */
export const TIMING = [
  'rtp_clock', 'rtp_sendpool', 'rtp_session', 'rtp_peers', 'media_worker', 'loop_reservations', 'outbound_pacer',
  'telephony_outbound', 'inference_schedule', 'telephony_server_hardening', 'sip_stack', 'crash_recovery', 'hostile_clients',
  'telephony_digest_limits', 'sip_digest_guard',
];

const files = (names: string[]) => names.map((n) => `test/${n}.test.ts`);
const unitOnly = UNIT.filter((n) => !TIMING.includes(n));

// PARLEY_TEST_TIER=unit (npm run test:unit): the unit files alone, timing ones included, two at a time.
const unitTier = process.env.PARLEY_TEST_TIER === 'unit';

export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two files at a time in the shared tiers (the timing tier runs in one fork: see its project).
    maxWorkers: 2,
    minWorkers: 1,
    projects: unitTier
      ? [{ extends: true, test: { name: 'unit', include: files(UNIT) } }]
      : [
      { extends: true, test: { name: 'unit', include: files(unitOnly), sequence: { groupOrder: 0 } } },
      {
        extends: true,
        test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: files([...UNIT, ...TIMING]), sequence: { groupOrder: 0 } },
      },
      { extends: true, test: { name: 'timing', include: files(TIMING), sequence: { groupOrder: 1 }, poolOptions: { forks: { singleFork: true } } } },
      ],
  },
});
