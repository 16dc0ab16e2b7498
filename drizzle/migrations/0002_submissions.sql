CREATE TABLE "submissions" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "submissions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"form_id" integer NOT NULL,
	"instance_id" text NOT NULL,
	"draft" boolean DEFAULT false NOT NULL,
	"submitter_id" integer,
	"device_id" text,
	"user_agent" text,
	"review_state" text,
	"current_def_id" integer,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone,
	"deleted_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "submission_defs" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "submission_defs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"submission_id" integer NOT NULL,
	"form_def_id" integer NOT NULL,
	"instance_id" text NOT NULL,
	"xml" text NOT NULL,
	"md5" text NOT NULL,
	"instance_name" text,
	"submitter_id" integer,
	"device_id" text,
	"user_agent" text,
	"current" boolean DEFAULT true NOT NULL,
	"encrypted" boolean DEFAULT false NOT NULL,
	"values" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "submission_attachments" (
	"submission_def_id" integer NOT NULL,
	"name" text NOT NULL,
	"blob_id" integer,
	"content_type" text,
	"updated_at" timestamp (3) with time zone,
	CONSTRAINT "submission_attachments_pkey" PRIMARY KEY("submission_def_id","name")
);
--> statement-breakpoint
ALTER TABLE "submissions" ADD CONSTRAINT "submissions_form_id_forms_id_fk" FOREIGN KEY ("form_id") REFERENCES "public"."forms"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "submissions" ADD CONSTRAINT "submissions_submitter_id_actors_id_fk" FOREIGN KEY ("submitter_id") REFERENCES "public"."actors"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "submissions" ADD CONSTRAINT "submissions_current_def_id_submission_defs_id_fk" FOREIGN KEY ("current_def_id") REFERENCES "public"."submission_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "submission_defs" ADD CONSTRAINT "submission_defs_submission_id_submissions_id_fk" FOREIGN KEY ("submission_id") REFERENCES "public"."submissions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "submission_defs" ADD CONSTRAINT "submission_defs_form_def_id_form_defs_id_fk" FOREIGN KEY ("form_def_id") REFERENCES "public"."form_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "submission_defs" ADD CONSTRAINT "submission_defs_submitter_id_actors_id_fk" FOREIGN KEY ("submitter_id") REFERENCES "public"."actors"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "submission_attachments" ADD CONSTRAINT "submission_attachments_submission_def_id_submission_defs_id_fk" FOREIGN KEY ("submission_def_id") REFERENCES "public"."submission_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "submission_attachments" ADD CONSTRAINT "submission_attachments_blob_id_blobs_id_fk" FOREIGN KEY ("blob_id") REFERENCES "public"."blobs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "submissions_form_instance_draft" ON "submissions" USING btree ("form_id","instance_id","draft");--> statement-breakpoint
CREATE INDEX "submissions_form_created" ON "submissions" USING btree ("form_id","draft","created_at","id") WHERE "submissions"."deleted_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "submission_defs_submission_instance" ON "submission_defs" USING btree ("submission_id","instance_id");--> statement-breakpoint
CREATE INDEX "submission_defs_instance_id" ON "submission_defs" USING btree ("instance_id");