// Assembles one Parley process: store, services, HTTP routes; `stop()` drains requests and closes the store.
import pino, { type Logger } from 'pino';
import { openStore } from '../control-plane/store/db.js';
import { KeyResolver, ensureBootstrapKey } from '../control-plane/auth/keys.js';
import { RateLimiter } from '../control-plane/auth/rate-limit.js';
import { ScanRunner } from '../control-plane/agents/scan-runner.js';
import { PublishService } from '../control-plane/agents/publish.js';
import { LlmModels, modelWarnings } from '../calls/llm-models.js';
import { languageWarnings } from '../calls/call-language.js';
import { chatCompletionRoutes } from '../transports/routes/chat-completions.js';
import { HttpServer } from '../transports/http/server.js';
import { HttpMetrics } from '../transports/http/metrics.js';
import { authenticator } from '../transports/http/auth.js';
import { AccessTokens, loadSigningSecret } from '../control-plane/auth/tokens.js';
import { TokenMinter, tokenRoutes } from '../transports/routes/auth-token.js';
import { ModelRegistry } from '../engine/models/registry.js';
import { ttsRoutes } from '../transports/routes/tts.js';
import { sttRoutes } from '../transports/routes/stt.js';
import { voiceRoutes } from '../transports/routes/voices.js';
import { ttsLiveSockets } from '../transports/ws/tts-live.js';
import { pronunciationDictRoutes } from '../transports/routes/pronunciation-dicts.js';
import { sttLiveSockets } from '../transports/ws/stt-live.js';
import { s2sSocket } from '../transports/ws/s2s.js';
import path from 'node:path';
import { systemRoutes } from '../transports/routes/system.js';
import { referenceRoutes } from '../transports/routes/reference.js';
import type { RouteRecord } from '../transports/http/types.js';
import { sessionRoutes } from '../transports/routes/session.js';
import { BrowserSessions, SignInLimiter } from '../control-plane/auth/sessions.js';
import { buildConsole, consoleRoutes } from './console.js';
import { agentRoutes } from '../transports/routes/agents.js';
import { versioningRoutes } from '../transports/routes/versioning.js';
import { legacyV1Routes } from '../transports/routes/legacy-v1.js';
import { SecretVault, loadMasterKey } from '../control-plane/secrets/vault.js';
import { SecretBox } from '../control-plane/secrets/secret-box.js';
import { WebhookDispatcher } from '../control-plane/webhooks/dispatcher.js';
import { webhookRoutes } from '../transports/routes/webhooks.js';
import { telephonyRoutes } from '../transports/routes/telephony.js';
import { telephonyAgentRoutes } from '../transports/routes/telephony-agents.js';
import { initTelephonyWindow } from '../control-plane/telephony/window.js';
import { secretRoutes } from '../transports/routes/secrets.js';
import { toolRoutes } from '../transports/routes/tools.js';
import { conversationRoutes } from '../transports/routes/conversations.js';
import { promptScoringRoutes } from '../transports/routes/prompt-scoring.js';
import { AgentMetrics } from '../calls/agent-metrics.js';
import { TelephonyMetrics } from '../telephony/metrics.js';
import { CallRuntime } from '../calls/runtime.js';
import { openObjectStore } from '../control-plane/recordings/open.js';
import { recordingRoutes } from '../transports/routes/recordings.js';
import { agentConnectSocket } from '../transports/ws/agent-connect.js';
import { SessionLimits } from '../calls/session-limits.js';
import { SipStack } from '../telephony/sip/stack.js';
import { InboundCalls } from '../telephony/inbound.js';
import { MediaWorker } from '../telephony/media/remote.js';
import { OutboundDialer } from '../telephony/outbound/dialer.js';
import { CallTransfers } from '../telephony/transfer.js';
import { LocalPacer, RedisPacer } from '../telephony/outbound/pacer.js';
import { LocalDigestGuard, RedisDigestGuard } from '../telephony/digest-guard.js';
import { LoopReservations } from '../transports/http/loop-reservations.js';
import { setConfigEgressPolicy } from '../control-plane/agents/config-schema.js';
import { outboundRoutes, testCallQueue, type OutboundRouteDeps } from '../transports/routes/outbound.js';
import { campaignRoutes } from '../transports/routes/campaigns.js';
import { useNonceSecret } from '../telephony/sip/digest.js';
import { byeFromSnapshot, type DialogSnapshot } from '../telephony/sip/dialog.js';
import { LiveCalls } from '../calls/live-calls.js';
import { CampaignRunner } from '../control-plane/campaigns/runner.js';
import { audienceRoutes } from '../transports/routes/audiences.js';
import { sweepAbandonedUploads } from '../control-plane/campaigns/audience-removal.js';
import { sweepUnfinishedCampaigns } from '../control-plane/campaigns/campaigns.js';
import { dncRoutes, type DncRouteDeps } from '../transports/routes/dnc.js';
import { knowledgeBaseRoutes } from '../transports/routes/knowledge-bases.js';
import { failStalledItems } from '../control-plane/knowledge/knowledge-bases.js';
import { organizationRoutes } from '../transports/routes/organization.js';
import { callActionRoutes } from '../transports/routes/call-actions.js';
import { analyticsRoutes } from '../transports/routes/analytics.js';
import { liveEventRoutes } from '../transports/routes/live-events.js';
import { LiveEvents } from '../calls/live-events.js';
import { PgLiveBus, RedisLiveBus } from '../calls/live-bus.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Settings } from './settings.js';
import { startTracing } from './tracing.js';

export interface RunningApp {
  port: number;
  logger: Logger;
  /** Every route served (HTTP and WebSocket), as /openapi.json was built from it. */
  routes: readonly RouteRecord[];
  stop(): Promise<void>;
}

/** How often every server fails the knowledge-base items a stopped server left unread (failStalledItems). */
const STALLED_ITEM_SWEEP_MS = 5 * 60_000;

export async function startApp(settings: Settings, logger: Logger = pino({ level: settings.logLevel })): Promise<RunningApp> {
  // OpenTelemetry traces when OTEL_EXPORTER_OTLP_ENDPOINT is set (the SDK is loaded only then); flushed last in stop().
  const tracing = await startTracing(settings.traces, logger);
  const store = await openStore({ dataDir: settings.dataDir, databaseUrl: settings.databaseUrl, pgSchema: settings.databaseSchema });
  logger.info({ store: store.describe }, 'store open');
  if (settings.bootstrapKey && (await ensureBootstrapKey(store.db, settings.bootstrapKey))) logger.info('bootstrap API key created');
  const vault = await SecretVault.open(store.db, { dataDir: settings.dataDir, envKey: settings.secretKey });
  const rework = await initTelephonyWindow(store.db, settings.telephonyReworkDate);
  logger.info({ release: rework.toISOString() }, 'telephony migration window');

  const keys = new KeyResolver(store.db, settings.keyCacheMs, 2000, (err) =>
    logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not record API key usage; retrying at the next flush'),
  );
  const tokens = new AccessTokens(await loadSigningSecret(store.db), settings.region);
  const scanner = new ScanRunner({ hardTimeoutMs: settings.scanTimeoutMs });
  // Start the scan worker now, so the first publish is not charged the worker's start-up against its scan budget.
  const warm = await scanner.scan({});
  if (!warm.ok) throw new Error(`security scanner failed to start: ${warm.error}`);
  // The language models agents and chat completions use: named ones (PARLEY_LLM_MODELS) and the default (PARLEY_LLM_*).
  const llmModels = new LlmModels(settings.llmModels, settings.llm);
  if (settings.llmModels.length || settings.llm) {
    logger.info({ models: settings.llmModels.map((m) => ({ name: m.name, model: m.model, host: new URL(m.baseUrl).host })), default: settings.llm?.model ?? null, ...(settings.llmModelsFile ? { file: settings.llmModelsFile } : {}) }, 'language models');
  }
  const publish = new PublishService(store.db, scanner, settings.scanBudgetMs, logger, (workflowType, config) => [...modelWarnings(workflowType, config, llmModels), ...languageWarnings(config, registry.localVoices())]);
  const metrics = new HttpMetrics();
  const sessions = new BrowserSessions(store.db, keys, settings.sessionTtlSeconds);
  // The outbound dialer's INVITE slots: a request does not start right before one (a burst of POSTs kept them late).
  const reservations = new LoopReservations();
  const server = new HttpServer({
    logger,
    metrics,
    maxBodyBytes: settings.maxBodyBytes,
    authenticate: authenticator(keys, tokens, sessions, new RateLimiter(), settings.rateLimitPerMinute),
    clearance: reservations,
  });
  const secretBox = new SecretBox(loadMasterKey(settings.dataDir, settings.secretKey));
  const webhooks = new WebhookDispatcher(store.db, {
    secrets: secretBox,
    allowPrivate: settings.allowPrivateEgress,
    logger,
    timeoutMs: settings.webhookTimeoutMs,
    pollMs: settings.webhookPollMs,
    concurrency: settings.webhookConcurrency,
  });
  const ctx = { db: store.db, publish, logger, settings, vault, webhooks, secretBox };
  // URLs in agents' configurations (the pre-call API) are checked against this server's egress policy when written.
  setConfigEgressPolicy(settings.allowPrivateEgress);
  systemRoutes(server, store, metrics);
  // One mint limiter: tokens the console mints from its session count against the key's limit at /auth/token too.
  const minter = new TokenMinter(tokens, new RateLimiter(), settings.tokenMintsPerMinute);
  sessionRoutes(server, settings.atomsPrefix, { sessions, keys, signIns: new SignInLimiter(), minter });
  consoleRoutes(server, await buildConsole(settings.atomsPrefix, settings.wavesPrefix));
  agentRoutes(server, settings.atomsPrefix, ctx);
  versioningRoutes(server, settings.atomsPrefix, ctx);
  // The outbound dialer is set once the SIP leg runs (below); telephony test calls reach it through these deps.
  const outbound: OutboundRouteDeps = { dialer: null, maxQueuedPerAddress: settings.outboundQueue };
  legacyV1Routes(server, settings.atomsPrefix, ctx, testCallQueue(ctx, outbound));
  secretRoutes(server, settings.atomsPrefix, ctx);
  toolRoutes(server, settings.atomsPrefix, ctx);
  conversationRoutes(server, settings.atomsPrefix, ctx, testCallQueue(ctx, outbound));
  promptScoringRoutes(server, settings.atomsPrefix, ctx);
  webhookRoutes(server, settings.atomsPrefix, ctx);
  telephonyRoutes(server, settings.atomsPrefix, ctx);
  telephonyAgentRoutes(server, settings.atomsPrefix, ctx);
  outboundRoutes(server, settings.atomsPrefix, ctx, outbound);
  audienceRoutes(server, settings.atomsPrefix, ctx);
  let campaigns: CampaignRunner | null = null;
  campaignRoutes(server, settings.atomsPrefix, ctx, { wake: () => campaigns?.wake() });
  const dnc: DncRouteDeps = { runtime: null };
  dncRoutes(server, settings.atomsPrefix, ctx, dnc);
  knowledgeBaseRoutes(server, settings.atomsPrefix, ctx);
  callActionRoutes(server, settings.atomsPrefix, ctx);
  const analytics = await analyticsRoutes(server, settings.atomsPrefix, ctx);
  tokenRoutes(server, settings.wavesPrefix, minter);
  const registry = new ModelRegistry({
    cacheDir: path.join(settings.dataDir, 'models-cache'),
    modelsDir: settings.modelsDir,
    concurrency: settings.inferenceConcurrency,
    maxWaiting: settings.inferenceQueue,
    synthesisWorkers: settings.inferenceConcurrency,
    sttBeams: settings.sttBeams,
    sttLiveBeams: settings.sttLiveBeams,
    sttThreads: settings.sttThreads,
    sttShortWindow: settings.sttShortWindow,
    workerNice: settings.inferenceNice,
  });
  metrics.watchInference(registry.queue);
  const started = Date.now();
  await registry.init(settings.warmModels);
  // Which synthesis engines and voices this server has (RHVoice only where the Debian package is installed), and why one is missing.
  const engines = Object.fromEntries(registry.engines().map((e) => [e.id, e.voices.length ? e.voices.join(',') : `none (${e.missing ?? 'not installed'})`]));
  logger.info({ warm: settings.warmModels, ms: Date.now() - started, voices: registry.voices().length, defaultVoice: registry.defaultVoiceId, engines }, 'speech models ready');
  voiceRoutes(server, settings.wavesPrefix, registry);
  ttsRoutes(server, settings.wavesPrefix, registry, store.db);
  pronunciationDictRoutes(server, settings.wavesPrefix, store.db);
  const limits = new SessionLimits(settings.sessionCaps);
  await organizationRoutes(server, settings.atomsPrefix, ctx, limits);
  ttsLiveSockets(server, settings.wavesPrefix, registry, logger, limits, store.db);
  sttLiveSockets(server, settings.wavesPrefix, registry, logger, limits, settings.sttIdleSeconds);
  s2sSocket(server, settings.wavesPrefix, { registry, logger, llm: settings.llm, draining: () => server.isDraining, toolTimeoutMs: settings.s2sToolTimeoutMs, limits, db: store.db });
  chatCompletionRoutes(server, settings.wavesPrefix, llmModels, logger);
  sttRoutes(server, settings.wavesPrefix, registry, { maxBodyBytes: settings.sttMaxBytes, maxAudioSeconds: settings.sttMaxSeconds }, logger, { allowPrivate: settings.allowPrivateEgress });
  // Recordings: files under the data dir unless PARLEY_RECORDING_STORE=database (every server sharing the store serves them).
  const recordingStore = settings.recordingStore ?? 'files';
  const objects = openObjectStore(recordingStore, { db: store.db, root: path.join(settings.dataDir, 'recordings'), secret: await loadSigningSecret(store.db, 'recording_url_signing_key') });
  if (!settings.recordingStore && store.dialect === 'postgres' && settings.redisUrl) {
    logger.warn('recordings are kept in this server\'s data dir: with several servers set PARLEY_RECORDING_STORE=database (or files, with one shared recordings directory)');
  }
  recordingRoutes(server, settings.atomsPrefix, ctx, objects);
  // This server's name on what it holds in the store (outbound claims, live calls).
  const owner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  // Calls up here are noted in the store; those of a server that stopped are ended by this one (or another).
  const live = new LiveCalls({ db: store.db, owner, leaseMs: settings.outboundLeaseSecs * 1000, logger });
  // Live call events (GET /events): across the servers sharing a PostgreSQL store (Redis pub/sub when configured,
  // else LISTEN/NOTIFY); a SQLite store has one server, so they stay in the process.
  const liveBus =
    store.dialect !== 'postgres' || !settings.databaseUrl
      ? null
      : settings.redisUrl
        ? new RedisLiveBus(settings.redisUrl, settings.databaseSchema, logger)
        : new PgLiveBus(settings.databaseUrl, settings.databaseSchema, logger);
  const liveEvents = new LiveEvents(liveBus, { onBusError: (err) => logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'live events: could not reach the other servers') });
  await liveEvents.start();
  logger.info({ transport: liveEvents.transport }, 'live call events');
  liveEventRoutes(server, settings.atomsPrefix, ctx, liveEvents);
  const runtime = new CallRuntime({
    db: store.db,
    registry,
    vault,
    logger,
    metrics: new AgentMetrics(metrics.registry),
    defaultLlm: settings.llm,
    llmModels,
    objects,
    allowPrivateEgress: settings.allowPrivateEgress,
    notifyWebhooks: () => webhooks.notify(),
    live,
    liveEvents,
  });
  dnc.runtime = runtime;
  const agentSockets = agentConnectSocket(server, settings.atomsPrefix, { db: store.db, runtime, logger, draining: () => server.isDraining, limits });
  // Last: /openapi.json is built from every route registered before it.
  referenceRoutes(server, { atomsPrefix: settings.atomsPrefix, wavesPrefix: settings.wavesPrefix });
  server.finish();

  // Audience uploads a stopped server left half-written (invisible meanwhile) are removed once they have gone still.
  void sweepAbandonedUploads(store.db).then(
    (swept) => swept && logger.info({ swept }, 'removed audience uploads a stopped server left unfinished'),
    (err: unknown) => logger.warn({ err: String(err) }, 'could not sweep unfinished audience uploads'),
  );
  // Campaigns a stopped server left while copying their recipients (invisible meanwhile) likewise.
  void sweepUnfinishedCampaigns(store.db).then(
    (swept) => swept && logger.info({ swept }, 'removed campaigns a stopped server left unfinished'),
    (err: unknown) => logger.warn({ err: String(err) }, 'could not sweep unfinished campaigns'),
  );
  // Knowledge-base items a stopped server left pending or processing are failed once still (at start, then every
  // few minutes: a server that restarts at once finds them still fresh).
  const sweepItems = () =>
    failStalledItems(store.db).then(
      (swept) => swept && logger.info({ swept }, 'failed knowledge-base items a stopped server left unread'),
      (err: unknown) => logger.warn({ err: String(err) }, 'could not sweep unread knowledge-base items'),
    );
  void sweepItems();
  const itemSweeper = setInterval(() => void sweepItems(), STALLED_ITEM_SWEEP_MS);
  itemSweeper.unref();
  const resumed = await publish.resumePendingScans();
  if (resumed) logger.info({ resumed }, 'resumed deferred security scans');
  // Telephony: the SIP leg (PARLEY_SIP_PORT=off disables it), before the HTTP port opens so `listening` means ready.
  // Digest nonces are signed with a secret in the store, so a challenge one server made is good at every other.
  if (settings.sip.port !== null) useNonceSecret(await loadSigningSecret(store.db, 'sip_digest_nonce_key'));
  const sip = settings.sip.port === null ? null : await SipStack.start({ host: settings.sip.host, port: settings.sip.port, publicAddress: settings.sip.publicAddress, logger });
  // Every call's RTP runs on the media worker thread.
  const media = new MediaWorker(settings.sip.rtpPorts, settings.sip.mediaPriority, { senders: settings.sip.rtpSenders, leadMs: settings.sip.rtpSendLeadMs });
  if (sip) {
    await media.start();
    const p = media.priority;
    if (p?.reason) logger.info({ wanted: settings.sip.mediaPriority, priority: p.priority, reason: p.reason }, `media thread: ${settings.sip.mediaPriority} scheduling not available here, normal priority`);
    else logger.info({ priority: p?.priority }, 'media thread priority');
    const sending = media.sending;
    if (sending?.sendersReason) logger.info({ wanted: settings.sip.rtpSenders, senders: sending.senders, reason: sending.sendersReason }, 'RTP send pool: not as asked');
    else logger.info({ senders: sending?.senders, cpus: sending?.senderCpus, leadMs: settings.sip.rtpSendLeadMs }, 'RTP send pool');
  }
  const telephonyMetrics = new TelephonyMetrics(metrics.registry);
  // Outbound calls: paced per carrier address in this process, or with every server sharing PARLEY_REDIS_URL.
  const pacer = sip ? (settings.redisUrl ? new RedisPacer(settings.redisUrl) : new LocalPacer()) : null;
  // Transfers (REFER, or a second call at the pace of its carrier address bridged to the caller).
  const transfers = sip && pacer ? new CallTransfers(sip, { db: store.db, carrier: settings.carrier, secrets: secretBox, media, pacer, logger }) : undefined;
  // Digest guessing limits: counted in this process, or across every server sharing PARLEY_REDIS_URL.
  const digestGuard = sip ? (settings.redisUrl ? new RedisDigestGuard(settings.redisUrl) : new LocalDigestGuard()) : null;
  const inbound = sip && digestGuard
    ? new InboundCalls(sip, { db: store.db, runtime, limits, secrets: secretBox, carrier: settings.carrier, logger, media, mediaTimeoutSecs: settings.sip.rtpTimeoutSecs, metrics: telephonyMetrics, transfers, digestGuard, live })
    : null;
  const dialer = sip && pacer
    ? new OutboundDialer(sip, {
        db: store.db, runtime, limits, media, pacer, secrets: secretBox, carrier: settings.carrier, logger, metrics: telephonyMetrics,
        owner, mediaTimeoutSecs: settings.sip.rtpTimeoutSecs,
        ringSecs: settings.outboundRingSecs,
        leaseMs: settings.outboundLeaseSecs * 1000,
        transfers,
        reservations,
        live,
      })
    : null;
  outbound.dialer = dialer;
  dialer?.start();
  // Campaigns queue their calls into the outbound queue (in the store): any server sharing it dials them.
  campaigns = new CampaignRunner({
    db: store.db, carrier: settings.carrier, logger, wakeDialer: () => dialer?.wake(), maxQueuedPerAddress: settings.outboundQueue, minuteMs: settings.campaignMinuteMs,
    leaseMs: settings.outboundLeaseSecs * 1000,
  });
  campaigns.start();
  // Calls a stopped server left up: hung up (when this server has a SIP leg) and their records ended.
  live.start({
    closeRecord: (callId, lastSeen) => runtime.closeAbandoned(callId, lastSeen),
    hangUp: sip ? (dialog) => byeFromSnapshot(sip, dialog as DialogSnapshot, { Reason: 'SIP;cause=503;text="server stopped"' }) : undefined,
  });
  if (sip) logger.info({ sipPort: sip.port, host: sip.host, publicAddress: sip.publicAddress }, 'sip listening');
  const port = await server.listen(settings.host, settings.port);
  logger.info({ port, host: settings.host, atoms: settings.atomsPrefix, waves: settings.wavesPrefix }, 'listening');
  logger.info(`console: http://${settings.host === '0.0.0.0' ? '127.0.0.1' : settings.host}:${port}/ (sign in with an API key)`);
  webhooks.start();

  return {
    port,
    logger,
    routes: server.routes,
    async stop() {
      clearInterval(itemSweeper);
      await campaigns?.stop();
      const calls = Promise.all([agentSockets.endAll('server_shutdown'), inbound?.endAll('server_shutdown'), dialer?.stop('server_shutdown')]);
      // Once this server's calls have ended (their subscribers told so), the streams still open (calls elsewhere) end.
      const liveClosed = calls.then(() => liveEvents.close(), () => liveEvents.close());
      await server.drain(settings.shutdownTimeoutMs);
      await calls;
      await liveClosed;
      await live.stop();
      await sip?.close();
      await media.close();
      await pacer?.close();
      await digestGuard?.close();
      server.close();
      await keys.close();
      await scanner.close();
      await registry.close();
      await webhooks.stop();
      await analytics.close();
      await store.close();
      // Last: the spans of the calls and deliveries that ended above.
      await tracing?.shutdown();
    },
  };
}
