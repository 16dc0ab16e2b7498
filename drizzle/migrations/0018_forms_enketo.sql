DROP INDEX "forms_enketo_id";--> statement-breakpoint
DROP INDEX "forms_enketo_once_id";--> statement-breakpoint
ALTER TABLE "forms" ADD COLUMN "draft_enketo_id" text;--> statement-breakpoint
CREATE INDEX "forms_draft_enketo_id" ON "forms" USING btree ("draft_enketo_id");--> statement-breakpoint
CREATE INDEX "forms_enketo_id" ON "forms" USING btree ("enketo_id");--> statement-breakpoint
CREATE INDEX "forms_enketo_once_id" ON "forms" USING btree ("enketo_once_id");