import { boolean, integer, jsonb, pgTable, text } from 'drizzle-orm/pg-core';
import { ts } from './_columns';
import type { ManagedKeyArchive } from '../../lib/encryption/crypto';

/** Encryption public keys: one row per distinct key (self-supplied in a form, or managed). */
export const keys = pgTable('keys', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  public: text('public').notNull().unique(),
  /**
   * Managed keys only: the private key protected by the project's passphrase (PBKDF2 + AES-CBC,
   * lib/encryption/crypto.ts; Central's shape). Null for self-supplied keys: never decryptable here.
   */
  private: jsonb('private').$type<ManagedKeyArchive>(),
  managed: boolean('managed').notNull().default(false),
  hint: text('hint'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export type KeyRow = typeof keys.$inferSelect;
