import { timestamp } from 'drizzle-orm/pg-core';

/** Timestamps every lifecycle row carries; timestamptz with millisecond precision, as Central's ISO strings. */
export const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });

export const lifecycle = {
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at'),
  deletedAt: ts('deleted_at'),
};
