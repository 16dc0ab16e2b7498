ALTER TABLE "form_defs" ADD COLUMN "xls_blob_id" integer;--> statement-breakpoint
ALTER TABLE "form_defs" ADD COLUMN "xls_content_type" text;--> statement-breakpoint
ALTER TABLE "form_defs" ADD CONSTRAINT "form_defs_xls_blob_id_blobs_id_fk" FOREIGN KEY ("xls_blob_id") REFERENCES "public"."blobs"("id") ON DELETE no action ON UPDATE no action;