CREATE TABLE "dataset_form_defs" (
	"dataset_id" integer NOT NULL,
	"form_def_id" integer NOT NULL,
	"actions" jsonb NOT NULL,
	CONSTRAINT "dataset_form_defs_pkey" PRIMARY KEY("dataset_id","form_def_id")
);
--> statement-breakpoint
CREATE TABLE "datasets" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "datasets_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"project_id" integer NOT NULL,
	"name" text NOT NULL,
	"actee_id" text NOT NULL,
	"approval_required" boolean DEFAULT false NOT NULL,
	"owner_only" boolean DEFAULT false NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp (3) with time zone,
	"deleted_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "ds_properties" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "ds_properties_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"dataset_id" integer NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"published_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "ds_property_fields" (
	"ds_property_id" integer NOT NULL,
	"form_def_id" integer NOT NULL,
	"path" text NOT NULL,
	CONSTRAINT "ds_property_fields_pkey" PRIMARY KEY("ds_property_id","form_def_id")
);
--> statement-breakpoint
CREATE TABLE "entities" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "entities_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"uuid" text NOT NULL,
	"dataset_id" integer NOT NULL,
	"creator_id" integer,
	"conflict" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone,
	"deleted_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "entity_def_sources" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "entity_def_sources_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"type" text NOT NULL,
	"submission_def_id" integer,
	"details" jsonb,
	"force_processed" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "entity_defs" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "entity_defs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"entity_id" integer NOT NULL,
	"source_id" integer,
	"current" boolean DEFAULT true NOT NULL,
	"version" integer NOT NULL,
	"base_version" integer,
	"label" text NOT NULL,
	"data" jsonb NOT NULL,
	"data_received" jsonb NOT NULL,
	"conflicting_properties" jsonb,
	"conflict" text,
	"branch_id" text,
	"trunk_version" integer,
	"branch_base_version" integer,
	"creator_id" integer,
	"user_agent" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "entity_submission_backlog" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "entity_submission_backlog_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"submission_id" integer NOT NULL,
	"submission_def_id" integer NOT NULL,
	"entity_uuid" text NOT NULL,
	"branch_id" text NOT NULL,
	"branch_base_version" integer NOT NULL,
	"logged_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "jobs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"action" text NOT NULL,
	"payload" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"done_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "dataset_form_defs" ADD CONSTRAINT "dataset_form_defs_dataset_id_datasets_id_fk" FOREIGN KEY ("dataset_id") REFERENCES "public"."datasets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "dataset_form_defs" ADD CONSTRAINT "dataset_form_defs_form_def_id_form_defs_id_fk" FOREIGN KEY ("form_def_id") REFERENCES "public"."form_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "datasets" ADD CONSTRAINT "datasets_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "datasets" ADD CONSTRAINT "datasets_actee_id_actees_id_fk" FOREIGN KEY ("actee_id") REFERENCES "public"."actees"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ds_properties" ADD CONSTRAINT "ds_properties_dataset_id_datasets_id_fk" FOREIGN KEY ("dataset_id") REFERENCES "public"."datasets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ds_property_fields" ADD CONSTRAINT "ds_property_fields_ds_property_id_ds_properties_id_fk" FOREIGN KEY ("ds_property_id") REFERENCES "public"."ds_properties"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ds_property_fields" ADD CONSTRAINT "ds_property_fields_form_def_id_form_defs_id_fk" FOREIGN KEY ("form_def_id") REFERENCES "public"."form_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entities" ADD CONSTRAINT "entities_dataset_id_datasets_id_fk" FOREIGN KEY ("dataset_id") REFERENCES "public"."datasets"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entities" ADD CONSTRAINT "entities_creator_id_actors_id_fk" FOREIGN KEY ("creator_id") REFERENCES "public"."actors"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entity_def_sources" ADD CONSTRAINT "entity_def_sources_submission_def_id_submission_defs_id_fk" FOREIGN KEY ("submission_def_id") REFERENCES "public"."submission_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entity_defs" ADD CONSTRAINT "entity_defs_entity_id_entities_id_fk" FOREIGN KEY ("entity_id") REFERENCES "public"."entities"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entity_defs" ADD CONSTRAINT "entity_defs_source_id_entity_def_sources_id_fk" FOREIGN KEY ("source_id") REFERENCES "public"."entity_def_sources"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entity_defs" ADD CONSTRAINT "entity_defs_creator_id_actors_id_fk" FOREIGN KEY ("creator_id") REFERENCES "public"."actors"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entity_submission_backlog" ADD CONSTRAINT "entity_submission_backlog_submission_id_submissions_id_fk" FOREIGN KEY ("submission_id") REFERENCES "public"."submissions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "entity_submission_backlog" ADD CONSTRAINT "entity_submission_backlog_submission_def_id_submission_defs_id_fk" FOREIGN KEY ("submission_def_id") REFERENCES "public"."submission_defs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "dataset_form_defs_form_def" ON "dataset_form_defs" USING btree ("form_def_id");--> statement-breakpoint
CREATE UNIQUE INDEX "datasets_project_name_live" ON "datasets" USING btree ("project_id","name") WHERE "datasets"."deleted_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "ds_properties_dataset_name" ON "ds_properties" USING btree ("dataset_id","name");--> statement-breakpoint
CREATE INDEX "ds_property_fields_form_def" ON "ds_property_fields" USING btree ("form_def_id");--> statement-breakpoint
CREATE UNIQUE INDEX "entities_uuid" ON "entities" USING btree ("uuid");--> statement-breakpoint
CREATE INDEX "entities_dataset_created" ON "entities" USING btree ("dataset_id","created_at","id");--> statement-breakpoint
CREATE INDEX "entity_def_sources_submission_def" ON "entity_def_sources" USING btree ("submission_def_id");--> statement-breakpoint
CREATE UNIQUE INDEX "entity_defs_entity_version" ON "entity_defs" USING btree ("entity_id","version");--> statement-breakpoint
CREATE INDEX "entity_defs_current" ON "entity_defs" USING btree ("entity_id") WHERE "entity_defs"."current";--> statement-breakpoint
CREATE INDEX "entity_defs_source" ON "entity_defs" USING btree ("source_id");--> statement-breakpoint
CREATE UNIQUE INDEX "entity_submission_backlog_branch" ON "entity_submission_backlog" USING btree ("branch_id","branch_base_version");--> statement-breakpoint
CREATE INDEX "jobs_pending" ON "jobs" USING btree ("id") WHERE "jobs"."done_at" is null;--> statement-breakpoint
ALTER TABLE "form_attachments" ADD CONSTRAINT "form_attachments_dataset_id_datasets_id_fk" FOREIGN KEY ("dataset_id") REFERENCES "public"."datasets"("id") ON DELETE no action ON UPDATE no action;