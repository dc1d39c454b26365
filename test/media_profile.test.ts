// PARLEY_MEDIA_PROFILE: one choice for the media thread's scheduling and sending, each part overridable by its own
// (advanced) setting; a profile that does not exist refuses start-up naming the variable.
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../server/settings.js';

const media = (env: Record<string, string>) => {
  const { mediaProfile, mediaPriority, rtpSenders, rtpSendLeadMs } = loadSettings(env).sip;
  return { mediaProfile, mediaPriority, rtpSenders, rtpSendLeadMs };
};

describe('media profile', () => {
  it('balanced by default: a short time slice, two sender threads, 10 ms ahead', () => {
    expect(media({})).toEqual({ mediaProfile: 'balanced', mediaPriority: 'latency', rtpSenders: 2, rtpSendLeadMs: 10 });
  });

  it('light and realtime set their parts; a part set on its own overrides the profile', () => {
    expect(media({ PARLEY_MEDIA_PROFILE: 'light' })).toEqual({ mediaProfile: 'light', mediaPriority: 'normal', rtpSenders: 0, rtpSendLeadMs: 10 });
    expect(media({ PARLEY_MEDIA_PROFILE: 'Realtime' })).toMatchObject({ mediaProfile: 'realtime', mediaPriority: 'realtime', rtpSenders: 2 });
    expect(media({ PARLEY_MEDIA_PROFILE: 'light', PARLEY_RTP_SENDERS: '1', PARLEY_RTP_SEND_LEAD_MS: '20' })).toEqual({ mediaProfile: 'light', mediaPriority: 'normal', rtpSenders: 1, rtpSendLeadMs: 20 });
    expect(media({ PARLEY_MEDIA_PRIORITY: 'normal' })).toMatchObject({ mediaProfile: 'balanced', mediaPriority: 'normal', rtpSenders: 2 });
  });

  it('refuses a profile or a part that does not exist, naming the variable', () => {
    expect(() => loadSettings({ PARLEY_MEDIA_PROFILE: 'fast' })).toThrow('PARLEY_MEDIA_PROFILE must be balanced, light, realtime');
    expect(() => loadSettings({ PARLEY_MEDIA_PROFILE: 'light', PARLEY_MEDIA_PRIORITY: 'max' })).toThrow('PARLEY_MEDIA_PRIORITY must be latency, realtime, normal');
  });
});
