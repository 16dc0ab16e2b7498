CREATE TABLE "submission_field_indexes" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "submission_field_indexes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"path" text NOT NULL,
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"requested_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp (3) with time zone,
	"built_at" timestamp (3) with time zone,
	"last_used_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"error" text
);
--> statement-breakpoint
CREATE UNIQUE INDEX "submission_field_indexes_path_kind" ON "submission_field_indexes" USING btree ("path","kind");--> statement-breakpoint
CREATE UNIQUE INDEX "submission_field_indexes_name" ON "submission_field_indexes" USING btree ("name");--> statement-breakpoint
-- A form field's text as a number / a time for OData $filter (lib/odata/index.ts fieldSql): null
-- when the text is not one, never an error (an index expression that raised would refuse the
-- submission). IMMUTABLE so expression indexes can use them; the time one fixes its time zone.
CREATE FUNCTION fb_field_number(t text) RETURNS numeric LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  IF t ~ '^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$' THEN RETURN t::numeric; END IF;
  RETURN NULL;
EXCEPTION WHEN others THEN RETURN NULL;
END $$;--> statement-breakpoint
CREATE FUNCTION fb_field_time(t text) RETURNS timestamptz LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET "TimeZone" = 'UTC' AS $$
BEGIN
  IF t ~ '^\s*[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])' THEN RETURN t::timestamptz; END IF;
  RETURN NULL;
EXCEPTION WHEN others THEN RETURN NULL;
END $$;
