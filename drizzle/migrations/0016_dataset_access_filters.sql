CREATE TABLE "dataset_access_filters" (
	"dataset_id" integer NOT NULL,
	"dataset_property_id" integer NOT NULL,
	"actor_property_id" integer NOT NULL,
	CONSTRAINT "dataset_access_filters_pkey" PRIMARY KEY("dataset_property_id","actor_property_id")
);
--> statement-breakpoint
ALTER TABLE "dataset_access_filters" ADD CONSTRAINT "dataset_access_filters_dataset_id_datasets_id_fk" FOREIGN KEY ("dataset_id") REFERENCES "public"."datasets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "dataset_access_filters" ADD CONSTRAINT "dataset_access_filters_dataset_property_id_ds_properties_id_fk" FOREIGN KEY ("dataset_property_id") REFERENCES "public"."ds_properties"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "dataset_access_filters" ADD CONSTRAINT "dataset_access_filters_actor_property_id_actor_properties_id_fk" FOREIGN KEY ("actor_property_id") REFERENCES "public"."actor_properties"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "dataset_access_filters_dataset" ON "dataset_access_filters" USING btree ("dataset_id");--> statement-breakpoint
CREATE INDEX "dataset_access_filters_actor_property" ON "dataset_access_filters" USING btree ("actor_property_id");