CREATE TABLE "user_preferences" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "user_preferences_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"user_id" integer NOT NULL,
	"project_id" integer,
	"property_name" text NOT NULL,
	"property_value" jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "user_preferences" ADD CONSTRAINT "user_preferences_user_id_actors_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."actors"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "user_preferences" ADD CONSTRAINT "user_preferences_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "user_preferences_site" ON "user_preferences" USING btree ("user_id","property_name") WHERE "user_preferences"."project_id" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "user_preferences_project" ON "user_preferences" USING btree ("user_id","project_id","property_name") WHERE "user_preferences"."project_id" is not null;