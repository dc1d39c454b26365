// What route handlers get: the store, services and settings; plus the actor of an authenticated request.
import type { Logger } from 'pino';
import type { Db } from '../../control-plane/store/db.js';
import type { PublishService } from '../../control-plane/agents/publish.js';
import type { Actor } from '../../control-plane/agents/agents.js';
import type { HttpRequest } from '../http/types.js';
import type { CarrierSettings } from '../../control-plane/telephony/carrier.js';
import type { SecretVault } from '../../control-plane/secrets/vault.js';
import type { WebhookDispatcher } from '../../control-plane/webhooks/dispatcher.js';
import type { SecretBox } from '../../control-plane/secrets/secret-box.js';

export interface RouteContext {
  db: Db;
  publish: PublishService;
  logger: Logger;
  /** The settings routes read (server/settings.ts parses them; a route layer does not import the server's). */
  settings: RouteSettings;
  /** Organization secrets vault (`vault.get(orgId, name)` decrypts, for the runtime only). */
  vault: SecretVault;
  /** Webhook delivery dispatcher: call `webhooks.notify()` after a transaction that ran enqueueEvent committed. */
  webhooks: WebhookDispatcher;
  /** Seals and opens webhook signing secrets (the vault's master key). */
  secretBox: SecretBox;
}

export interface RouteSettings {
  /** The HTTP port (a recording URL's host when the request named none). */
  port: number;
  /** Webhook URLs may point at private addresses (PARLEY_ALLOW_PRIVATE_EGRESS). */
  allowPrivateEgress: boolean;
  /** When the legacy v1 endpoints go away (their Sunset header). */
  v1SunsetDate?: Date;
  carrier: CarrierSettings;
}

export function actorOf(req: HttpRequest): Actor {
  if (!req.auth) throw new Error('route requires authentication');
  return { orgId: req.auth.orgId, name: req.auth.keyName };
}
