import { eq } from 'drizzle-orm';
import { blobs, configs, type ConfigRow } from '../../drizzle/schema';
import { audit } from '../audits/log';
import { canOrReject, speciesActee } from '../authz/can';
import { species } from '../authz/verbs';
import { storeBlob } from '../blobs';
import { withTx, type Ctx } from '../context';
import { problems } from '../problem';

/*
 * Server configuration as Central keeps it (lib/model/frames/config.js, resources/config.js): JSON
 * configs (`analytics`, `login-appearance`) and image configs (`logo`, `hero-image`). The login
 * page's three are public: GET /v1/config/public lists them and /v1/config/public/{key} reads one
 * without a session. The System > Customization page of the web UI sets them.
 */

/** Request body → stored value, per JSON config key (Central's fromValue: unknown fields dropped). */
const JSON_CONFIGS: Record<string, (body: unknown) => Record<string, unknown>> = {
  analytics: (v) => {
    const o = (v != null && typeof v === 'object' ? v : {}) as Record<string, unknown>;
    const out: Record<string, unknown> = { enabled: o.enabled === true };
    if (out.enabled) {
      if (typeof o.email === 'string' && o.email !== '') out.email = o.email;
      if (typeof o.organization === 'string' && o.organization !== '') out.organization = o.organization;
    }
    return out;
  },
  'login-appearance': (v) => {
    const o = (v != null && typeof v === 'object' ? v : {}) as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    if (typeof o.title === 'string' && o.title !== '') out.title = o.title;
    if (typeof o.description === 'string' && o.description !== '') out.description = o.description;
    return out;
  },
};
const BLOB_CONFIGS = new Set(['logo', 'hero-image']);

/** Whether a config key holds an image (its POST body is the bytes) rather than JSON. Pure. */
export const isImageConfig = (key: string): boolean => BLOB_CONFIGS.has(key);
const PUBLIC_CONFIGS = new Set(['login-appearance', 'logo', 'hero-image']);

export type ConfigJson = { key: string; setAt: string; value?: unknown; blobExists?: boolean };

/** A config row as Central's API shows it: key, setAt, then value (JSON) or blobExists (image). Pure. */
export function configJson(row: ConfigRow): ConfigJson {
  const base = { key: row.key, setAt: row.setAt.toISOString() };
  return BLOB_CONFIGS.has(row.key) ? { ...base, blobExists: row.blobId != null } : { ...base, value: row.value };
}

/** A config's image as blobResponse() serves it. */
export interface ConfigFile {
  sha: string;
  md5: string;
  contentType: string;
}

function settableOrReject(key: string) {
  if (JSON_CONFIGS[key] == null && !BLOB_CONFIGS.has(key)) {
    throw problems.user.unexpectedValue({ field: 'key', value: key, reason: 'the config is unknown or cannot be set.' });
  }
}

const configActee = speciesActee(species.config);

async function readConfig(ctx: Ctx, key: string): Promise<ConfigJson | ConfigFile> {
  const [row] = await ctx.db.select().from(configs).where(eq(configs.key, key));
  if (!row) throw problems.user.notFound();
  if (row.blobId == null) return configJson(row);
  const [blob] = await ctx.db.select().from(blobs).where(eq(blobs.id, row.blobId));
  if (!blob) throw problems.user.notFound();
  return { sha: blob.sha, md5: blob.md5, contentType: blob.contentType ?? 'application/octet-stream' };
}

/**
 * Every public config that is set (GET /v1/config/public), keyed by config key. Open to anyone.
 * @returns `{ 'login-appearance'?: ConfigJson, logo?: ConfigJson, 'hero-image'?: ConfigJson }`.
 */
export async function publicConfig(ctx: Ctx): Promise<Record<string, ConfigJson>> {
  const rows = await ctx.db.select().from(configs).orderBy(configs.key);
  const out: Record<string, ConfigJson> = {};
  for (const row of rows) if (PUBLIC_CONFIGS.has(row.key)) out[row.key] = configJson(row);
  return out;
}

/**
 * One config (GET /v1/config/{key}, needs config.read; GET /v1/config/public/{key}, anyone, public
 * keys only): the ConfigJson of a JSON config, or the image's blob for logo and hero-image.
 * @throws 403.1 a non-public key on the public route; 401.2/403.1 without config.read; 404.1 unset.
 */
export async function getConfig(ctx: Ctx, key: string, opts: { public?: boolean } = {}): Promise<ConfigJson | ConfigFile> {
  if (opts.public) {
    if (!PUBLIC_CONFIGS.has(key)) throw problems.user.insufficientRights();
  } else {
    await canOrReject(ctx, 'config.read', configActee);
  }
  return readConfig(ctx, key);
}

/**
 * Sets a config (POST /v1/config/{key}), replacing any earlier value: a JSON body for analytics and
 * login-appearance, the image bytes (with their Content-Type) for logo and hero-image.
 * Effects: upserts the config row (and stores the image blob); audits `config.set` with
 * `{ key, value }` or `{ key, blobId }`, no actee, as Central.
 * @throws 401.2/403.1 without config.set; 400.8 unknown key; 400.6 an image without Content-Type.
 */
export async function setConfig(ctx: Ctx, key: string, body: { json?: unknown; bytes?: Uint8Array; contentType?: string | null }): Promise<ConfigJson> {
  return withTx(ctx, async (tx) => {
    await canOrReject(tx, 'config.set', configActee);
    settableOrReject(key);
    let value: unknown = null;
    let blobId: number | null = null;
    if (BLOB_CONFIGS.has(key)) {
      if (!body.contentType) throw problems.user.invalidHeader({ field: 'Content-Type', value: body.contentType ?? null });
      blobId = (await storeBlob(tx, body.bytes ?? new Uint8Array(0), body.contentType)).id;
    } else {
      value = JSON_CONFIGS[key]!(body.json);
    }
    const setAt = new Date();
    const [row] = await tx.db
      .insert(configs)
      .values({ key, value, blobId, setAt })
      .onConflictDoUpdate({ target: configs.key, set: { value, blobId, setAt } })
      .returning();
    await audit(tx, tx, 'config.set', null, blobId != null ? { key, blobId } : { key, value });
    return configJson(row!);
  });
}

/**
 * Unsets a config (DELETE /v1/config/{key}); succeeds whether or not it was set, as Central.
 * Effects: deletes the row; audits `config.set` with `{ key, value: null, blobId: null }`.
 * @throws 401.2/403.1 without config.set; 400.8 unknown key.
 */
export async function unsetConfig(ctx: Ctx, key: string): Promise<void> {
  await withTx(ctx, async (tx) => {
    await canOrReject(tx, 'config.set', configActee);
    settableOrReject(key);
    await tx.db.delete(configs).where(eq(configs.key, key));
    await audit(tx, tx, 'config.set', null, { key, value: null, blobId: null });
  });
}
