CREATE TABLE "config" (
	"key" text PRIMARY KEY NOT NULL,
	"value" jsonb,
	"blob_id" integer,
	"set_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "config" ADD CONSTRAINT "config_blob_id_blobs_id_fk" FOREIGN KEY ("blob_id") REFERENCES "public"."blobs"("id") ON DELETE no action ON UPDATE no action;