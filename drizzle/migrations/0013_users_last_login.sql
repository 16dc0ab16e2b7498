ALTER TABLE "users" ADD COLUMN "last_login_at" timestamp (3) with time zone;--> statement-breakpoint
-- Hand-written: earlier logins are in the audit log (as Central's 20250910-02 backfill).
UPDATE "users" SET "last_login_at" = (
  SELECT max("logged_at") FROM "audits" WHERE "audits"."action" = 'user.session.create' AND "audits"."actor_id" = "users"."actor_id"
);--> statement-breakpoint
-- Hand-written: user search ranks by trigram similarity, as Central (lib/model/query/users.js).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
