CREATE TABLE "form_defs" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "form_defs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"form_id" integer NOT NULL,
	"xml" text NOT NULL,
	"name" text,
	"version" text NOT NULL,
	"hash" text NOT NULL,
	"sha" text NOT NULL,
	"sha256" text NOT NULL,
	"key_id" integer,
	"fields" jsonb NOT NULL,
	"datasets" jsonb NOT NULL,
	"entities_version" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp (3) with time zone,
	"published_by" integer,
	"publish_notes" text
);
--> statement-breakpoint
CREATE TABLE "form_attachments" (
	"form_id" integer NOT NULL,
	"form_def_id" integer NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"blob_id" integer,
	"content_type" text,
	"dataset_id" integer,
	"updated_at" timestamp (3) with time zone,
	CONSTRAINT "form_attachments_pkey" PRIMARY KEY("form_def_id","name")
);
--> statement-breakpoint
CREATE TABLE "keys" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "keys_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"public" text NOT NULL,
	"managed" boolean DEFAULT false NOT NULL,
	"hint" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "keys_public_unique" UNIQUE("public")
);
--> statement-breakpoint
ALTER TABLE "forms" ADD COLUMN "current_def_id" integer;--> statement-breakpoint
ALTER TABLE "forms" ADD COLUMN "draft_def_id" integer;--> statement-breakpoint
ALTER TABLE "forms" ADD COLUMN "draft_token" text;--> statement-breakpoint
ALTER TABLE "forms" ADD COLUMN "webforms_enabled" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "forms" ADD COLUMN "created_by" integer;--> statement-breakpoint
ALTER TABLE "form_defs" ADD CONSTRAINT "form_defs_form_id_forms_id_fk" FOREIGN KEY ("form_id") REFERENCES "public"."forms"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "form_defs" ADD CONSTRAINT "form_defs_key_id_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "form_defs" ADD CONSTRAINT "form_defs_published_by_actors_id_fk" FOREIGN KEY ("published_by") REFERENCES "public"."actors"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "form_attachments" ADD CONSTRAINT "form_attachments_form_id_forms_id_fk" FOREIGN KEY ("form_id") REFERENCES "public"."forms"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "form_attachments" ADD CONSTRAINT "form_attachments_form_def_id_form_defs_id_fk" FOREIGN KEY ("form_def_id") REFERENCES "public"."form_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "form_attachments" ADD CONSTRAINT "form_attachments_blob_id_blobs_id_fk" FOREIGN KEY ("blob_id") REFERENCES "public"."blobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "form_defs_form_id" ON "form_defs" USING btree ("form_id");--> statement-breakpoint
ALTER TABLE "forms" ADD CONSTRAINT "forms_current_def_id_form_defs_id_fk" FOREIGN KEY ("current_def_id") REFERENCES "public"."form_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "forms" ADD CONSTRAINT "forms_draft_def_id_form_defs_id_fk" FOREIGN KEY ("draft_def_id") REFERENCES "public"."form_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "forms" ADD CONSTRAINT "forms_created_by_actors_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."actors"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "forms_draft_token" ON "forms" USING btree ("draft_token");