// `GET /user` and `GET /organization` (hosted reference, "Atoms User" and "Atoms Organization"): who the caller is.
// There are no user accounts here: the caller is an API key (a console sign-in acts as one), so the "user" is that
// key and the organization's members are its keys. The organization `_id` is the id `POST /agent/{id}/duplicate`
// takes as `targetOrganizationId` (control-plane/agents/duplicate.ts compares it with the caller's organization).
import type { Db } from '../store/db.js';
import { notFound } from '../errors.js';

export interface Caller {
  orgId: string;
  keyId: string;
  keyName: string;
  via: 'key' | 'token' | 'session';
}

/** The SDK's GetUserResponse data: the calling key as a user (no name parts, no e-mail: keys have neither). */
export async function userDetails(db: Db, caller: Caller): Promise<Record<string, unknown>> {
  const key = await db.selectFrom('api_keys').select(['id', 'name', 'created_at']).where('id', '=', caller.keyId).executeTakeFirst();
  if (!key) throw notFound('The key of this request no longer exists');
  return {
    _id: key.id,
    firstName: key.name,
    lastName: '',
    userEmail: null,
    authProvider: caller.via === 'session' ? 'console_session' : caller.via === 'token' ? 'access_token' : 'api_key',
    isEmailVerified: false,
    organizationId: caller.orgId,
    keyName: key.name,
    createdAt: key.created_at,
  };
}

/** The SDK's GetOrganizationResponse data: the organization, its keys as members, and no billing plan. */
export async function organizationDetails(db: Db, caller: Caller): Promise<Record<string, unknown>> {
  const org = await db.selectFrom('organizations').selectAll().where('id', '=', caller.orgId).executeTakeFirst();
  if (!org) throw notFound('The organization of this request no longer exists');
  const keys = await db.selectFrom('api_keys').select(['id', 'name', 'created_at', 'last_used_at']).where('org_id', '=', org.id).orderBy('created_at').orderBy('id').execute();
  return {
    _id: org.id,
    name: org.name,
    members: keys.map((k) => ({ _id: k.id, name: k.name, type: 'api_key', isCaller: k.id === caller.keyId, createdAt: k.created_at, lastUsedAt: k.last_used_at })),
    // Self-hosted: no subscription or credits; the plan id says so.
    subscription: { planId: 'self-hosted' },
    createdAt: org.created_at,
  };
}
