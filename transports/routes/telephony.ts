// Telephony resource routes: numbers (/product/*, wire §1) and SIP trunks (/sip-trunk, wire §2); deprecated ones follow the window.
import type { HttpServer } from '../http/server.js';
import { docs, ok, type HttpRequest, type HttpResponse } from '../http/types.js';
import { ApiError, notFound } from '../../control-plane/errors.js';
import { availableNumbers, customProducts, platformProducts, releaseNumber, releaseNumberBody, rentNumber, rentNumberBody } from '../../control-plane/telephony/numbers.js';
import { importNumberBody, importPhoneNumber } from '../../control-plane/telephony/import.js';
import { inboundTrunkBody, outboundTrunkBody, trunkPatchBody } from '../../control-plane/telephony/trunk-input.js';
import { createTrunk, deleteTrunk, getTrunk, listTrunks, updateTrunk, type TrunkDeps } from '../../control-plane/telephony/trunks.js';
import { DEPRECATION, telephonyWindow } from '../../control-plane/telephony/window.js';
import { actorOf, type RouteContext } from './context.js';

export function telephonyRoutes(server: HttpServer, prefix: string, ctx: RouteContext): void {
  const auth = { auth: 'key' as const };
  const d = docs('Telephony');
  const deps: TrunkDeps = { db: ctx.db, box: ctx.secretBox };
  /** Whether deprecated items still work; responses that carry one say so with `Deprecation: true`. */
  const windowOpen = async () => (await telephonyWindow(ctx.db)).open;
  const deprecatedIf = (open: boolean) => (open ? { ...DEPRECATION } : undefined);
  const deprecated = deprecatedPath(ctx);

  const p = `${prefix}/product`;
  server.route('GET', `${p}/phone-numbers`, async (req) => {
    const open = await windowOpen();
    return ok(await platformProducts(ctx.db, actorOf(req), open), 200, deprecatedIf(open));
  }, { ...auth, doc: d("The organization's phone numbers") });
  server.route('GET', `${p}/all-numbers`, async (req) => {
    const open = await windowOpen();
    const actor = actorOf(req);
    const telephonyProducts = await platformProducts(ctx.db, actor, open);
    if (!open) return ok({ telephonyProducts });
    return ok({ telephonyProducts, customProducts: await customProducts(ctx.db, actor, open) }, 200, { ...DEPRECATION });
  }, { ...auth, doc: d('All numbers: platform and (during the migration window) custom', { description: 'Custom numbers are listed only during the telephony migration window (`Deprecation: true`).' }) });
  server.route('GET', `${p}/get-available-numbers`, async (req) => ok(await availableNumbers(ctx.db, req.query)), { ...auth, doc: d('Numbers available to rent', { query: [{ name: 'countryCode' }, { name: 'areaCode' }, { name: 'provider' }] }) });
  server.route('POST', `${p}/rent-number`, async (req) => {
    const open = await windowOpen();
    return ok(await rentNumber(ctx.db, actorOf(req), req.json(), open), 200, deprecatedIf(open));
  }, { ...auth, doc: d('Rent a number', { body: { schema: rentNumberBody } }) });
  server.route('POST', `${p}/release-number`, async (req) => ok(await releaseNumber(ctx.db, actorOf(req), req.json())), { ...auth, doc: d('Release a rented number', { body: { schema: releaseNumberBody } }) });
  server.route('POST', `${p}/import-phone-number`, async (req) => deprecated(200, () => importPhoneNumber(deps, actorOf(req), req.json())), { ...auth, doc: d('Import a number (deprecated: use SIP trunks)', { deprecated: true, body: { schema: importNumberBody } }) });

  const t = `${prefix}/sip-trunk`;
  const id = (req: HttpRequest) => req.params.id as string;
  server.route('POST', `${t}/inbound`, async (req) => ok(await createTrunk(deps, actorOf(req), 'inbound', req.json()), 201), { ...auth, doc: d('Create an inbound SIP trunk', { body: { schema: inboundTrunkBody }, response: { status: 201 } }) });
  server.route('POST', `${t}/outbound`, async (req) => ok(await createTrunk(deps, actorOf(req), 'outbound', req.json()), 201), { ...auth, doc: d('Create an outbound SIP trunk (credentials stored encrypted, never returned)', { body: { schema: outboundTrunkBody }, response: { status: 201 } }) });
  server.route('GET', t, async (req) => ok(await listTrunks(ctx.db, actorOf(req), req.query)), { ...auth, doc: d('List SIP trunks', { query: [{ name: 'direction', schema: { type: 'string', enum: ['inbound', 'outbound'] } }] }) });
  server.route('GET', `${t}/:id`, async (req) => ok(await getTrunk(ctx.db, actorOf(req), id(req))), { ...auth, doc: d('Read a SIP trunk') });
  server.route('PATCH', `${t}/:id`, async (req) => ok(await updateTrunk(deps, actorOf(req), id(req), req.json())), { ...auth, doc: d('Change a SIP trunk', { body: { schema: trunkPatchBody } }) });
  server.route('DELETE', `${t}/:id`, async (req) => ok(await deleteTrunk(ctx.db, actorOf(req), id(req))), { ...auth, doc: d('Delete a SIP trunk') });
}

/**
 * Runs a deprecated path: during the telephony window its answers (errors too) carry `Deprecation: true`; after
 * it the path answers as a removed route (404).
 */
export function deprecatedPath(ctx: RouteContext): (status: number, run: () => Promise<unknown>) => Promise<HttpResponse> {
  return async (status, run) => {
    if (!(await telephonyWindow(ctx.db)).open) throw notFound('Resource not found');
    try {
      return ok(await run(), status, { ...DEPRECATION });
    } catch (err) {
      if (err instanceof ApiError) err.options.headers = { ...err.options.headers, ...DEPRECATION };
      throw err;
    }
  };
}
