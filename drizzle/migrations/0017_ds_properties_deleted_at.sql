DROP INDEX "ds_properties_dataset_name";--> statement-breakpoint
ALTER TABLE "ds_properties" ADD COLUMN "deleted_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "ds_properties_dataset_name" ON "ds_properties" USING btree ("dataset_id","name") WHERE "ds_properties"."deleted_at" is null;