CREATE TABLE "actor_properties" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "actor_properties_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"project_id" integer NOT NULL,
	"name" text NOT NULL,
	CONSTRAINT "actor_properties_name_not_empty" CHECK (length("actor_properties"."name") > 0)
);
--> statement-breakpoint
CREATE TABLE "actor_property_values" (
	"actor_id" integer NOT NULL,
	"actor_property_id" integer NOT NULL,
	"value" text NOT NULL,
	CONSTRAINT "actor_property_values_pkey" PRIMARY KEY("actor_id","actor_property_id"),
	CONSTRAINT "actor_property_values_value_not_empty" CHECK (length("actor_property_values"."value") > 0)
);
--> statement-breakpoint
CREATE TABLE "public_links" (
	"actor_id" integer PRIMARY KEY NOT NULL,
	"form_id" integer NOT NULL,
	"created_by" integer NOT NULL,
	"once" boolean,
	"token" text
);
--> statement-breakpoint
ALTER TABLE "forms" ADD COLUMN "enketo_id" text;--> statement-breakpoint
ALTER TABLE "forms" ADD COLUMN "enketo_once_id" text;--> statement-breakpoint
ALTER TABLE "actor_properties" ADD CONSTRAINT "actor_properties_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "actor_property_values" ADD CONSTRAINT "actor_property_values_actor_id_actors_id_fk" FOREIGN KEY ("actor_id") REFERENCES "public"."actors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "actor_property_values" ADD CONSTRAINT "actor_property_values_actor_property_id_actor_properties_id_fk" FOREIGN KEY ("actor_property_id") REFERENCES "public"."actor_properties"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "public_links" ADD CONSTRAINT "public_links_actor_id_actors_id_fk" FOREIGN KEY ("actor_id") REFERENCES "public"."actors"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "public_links" ADD CONSTRAINT "public_links_form_id_forms_id_fk" FOREIGN KEY ("form_id") REFERENCES "public"."forms"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "public_links" ADD CONSTRAINT "public_links_created_by_actors_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."actors"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "actor_properties_project_id_name" ON "actor_properties" USING btree ("project_id","name");--> statement-breakpoint
CREATE INDEX "actor_property_values_actor_property_id" ON "actor_property_values" USING btree ("actor_property_id");--> statement-breakpoint
CREATE INDEX "public_links_form_id" ON "public_links" USING btree ("form_id");--> statement-breakpoint
CREATE UNIQUE INDEX "forms_enketo_id" ON "forms" USING btree ("enketo_id");--> statement-breakpoint
CREATE UNIQUE INDEX "forms_enketo_once_id" ON "forms" USING btree ("enketo_once_id");--> statement-breakpoint
-- Forms published before this migration get their public form ids now (alphanumeric, as the web UI's /f/ routes require).
UPDATE "forms" SET
  "enketo_id" = substr(md5(random()::text || clock_timestamp()::text || "id"::text), 1, 16),
  "enketo_once_id" = md5(random()::text || "id"::text || 'once') || md5(clock_timestamp()::text || random()::text)
WHERE "current_def_id" IS NOT NULL OR EXISTS (SELECT 1 FROM "form_defs" d WHERE d."form_id" = "forms"."id" AND d."published_at" IS NOT NULL);
