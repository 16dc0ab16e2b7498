import type { Config } from './config';
import type { Db } from './db/client';
import type { BlobStore } from './blobs/store';
import type { Logger } from './log';
import type { Mailer } from './mail';
import type { RawDeflater } from './exports/zip';

/** The authenticated party of a request (an `actors` row, with the fields rights checks need). */
export interface Actor {
  id: number;
  type: 'user' | 'field_key' | 'public_link' | 'singleUse';
  displayName: string;
  acteeId: string;
  createdAt: Date;
  updatedAt: Date | null;
  deletedAt: Date | null;
}

/** The session a request authenticated with (Bearer, cookie or App User key); null for Basic. */
export interface SessionInfo {
  tokenHash: string;
  /** The clear token, known only for the request that presented it. */
  token: string;
  csrf: string;
  createdAt: Date;
  expiresAt: Date;
}

export interface Auth {
  actor: Actor | null;
  session: SessionInfo | null;
  via: 'anonymous' | 'bearer' | 'basic' | 'cookie' | 'key';
}

/** Long-lived dependencies, built once per process (Node) or per request (Workers). */
export interface Deps {
  db: Db;
  blobs: BlobStore;
  config: Config;
  log: Logger;
  /**
   * A native raw-deflate compressor per ZIP entry (Node: zlib at level 1 on its thread pool; see
   * RawDeflater in lib/exports/zip.ts). Absent (Workers, tests that build their own deps): ZIP
   * entries are deflated in JavaScript.
   */
  deflateRaw?: () => RawDeflater;
  /** Native CRC-32 (`crc32(data, previous)`, Node's zlib), for ZIP entries; absent: computed in JavaScript. */
  crc32?: (data: Uint8Array, value: number) => number;
  /**
   * Native AES-CFB-128 (Node: OpenSSL; lib/runtime/native-crypto.ts) for decrypting exports.
   * Absent (Workers, tests that build their own deps): AES in JavaScript (lib/encryption/crypto.ts).
   */
  aesCfb?: (key: Uint8Array, iv: Uint8Array) => (cipher: Uint8Array) => Uint8Array;
  /**
   * Native incremental SHA-256 + MD5 (node:crypto on Node and on Workers with nodejs_compat), for
   * media hashed while they stream in (lib/blobs/staged.ts). Absent: JavaScript (@noble/hashes).
   */
  hashStream?: () => { update(chunk: Uint8Array): void; digest(): { sha: string; md5: string } };
  /**
   * Whether the database driver may stream `COPY … TO STDOUT` (lib/exports/copy.ts): postgres.js
   * over Node's net sockets. Absent (Workers' socket shim, PGlite, tests): exports take the general path.
   */
  copyToStream?: boolean;
  /**
   * Outgoing mail (lib/mail): SMTP when EMAIL_HOST is set, else .eml files under DATA_DIR/mail on the
   * local server. Absent (Workers, Lambda without EMAIL_HOST, tests): messages are logged, not sent.
   */
  mailer?: Mailer;
}

interface TxState {
  onRollback: Array<() => Promise<void>>;
  /** Run after the transaction committed (in-memory caches that must not see the old rows). */
  onCommit: Array<() => void>;
  /** The database outside the transaction, usable once it has ended (rollback hooks). */
  root: Db;
}

/** Everything a lib verb needs: who is asking, and the resources to answer with. */
export interface Ctx extends Deps {
  auth: Auth;
  requestId: string;
  /** True for the CLI and start-up tasks: every rights check passes and audits carry no actor. */
  system: boolean;
  /** Set inside withTx: `db` is then the open transaction. */
  tx?: TxState;
  /** Per-request cache of verbs by actee key (lib/authz/can.ts). */
  verbCache?: Map<string, Promise<Set<string>>>;
}

/** Thrown inside a transaction to roll it back without an error reaching the caller. */
class Rollback extends Error {}

/**
 * Runs `fn` in one database transaction; re-entrant (an open transaction is reused, as Central's
 * `transacting` and openstatus' withTx). `fn` receives a Ctx whose `db` is the transaction: use it
 * for every query, or PGlite (one connection) would wait on itself.
 * Effects: on failure, the registered rollback hooks run (blob cleanup), then the error is rethrown.
 */
export async function withTx<T>(ctx: Ctx, fn: (ctx: Ctx) => Promise<T>): Promise<T> {
  if (ctx.tx) return fn(ctx);
  const state: TxState = { onRollback: [], onCommit: [], root: ctx.db };
  try {
    const result = await ctx.db.transaction(async (tx) => fn({ ...ctx, db: tx as unknown as Db, tx: state }));
    for (const hook of state.onCommit) hook();
    return result;
  } catch (err) {
    for (const hook of state.onRollback.reverse()) {
      await hook().catch((e: unknown) => ctx.log.error('rollback hook failed', { err: e, requestId: ctx.requestId }));
    }
    throw err;
  }
}

/** Registers work to run once the current transaction has committed (at once outside one). */
export function onCommit(ctx: Ctx, hook: () => void): void {
  if (ctx.tx) ctx.tx.onCommit.push(hook);
  else hook();
}

/**
 * Registers work to undo outside the database if the current transaction rolls back (a blob
 * written to the store). Outside a transaction the hook is dropped: nothing can roll back.
 */
export function onRollback(ctx: Ctx, hook: () => Promise<void>): void {
  ctx.tx?.onRollback.push(hook);
}

export { Rollback };

/**
 * A context for work the system does itself (CLI commands, start-up tasks): every rights check
 * passes and audit rows carry no actor.
 */
export function systemCtx(deps: Deps): Ctx {
  return { ...deps, auth: { actor: null, session: null, via: 'anonymous' }, requestId: 'system', system: true };
}
