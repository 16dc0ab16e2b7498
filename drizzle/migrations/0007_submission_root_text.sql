ALTER TABLE "submission_defs" ADD COLUMN "root_text" text DEFAULT '' NOT NULL;--> statement-breakpoint
-- Backfill: each version's root leaf texts in its definition's order (rootLeafPaths, rootTextOf).
UPDATE "submission_defs" d SET "root_text" = coalesce((
  SELECT string_agg(coalesce(d.root_values ->> (f.value ->> 'path'), ''), E'\x1f' ORDER BY f.ord)
  FROM "form_defs" fd, jsonb_array_elements(fd.fields) WITH ORDINALITY AS f(value, ord)
  WHERE fd.id = d.form_def_id
    AND f.value ->> 'type' NOT IN ('structure', 'repeat')
    AND NOT EXISTS (
      SELECT 1 FROM jsonb_array_elements(fd.fields) r
      WHERE r ->> 'type' = 'repeat' AND left(f.value ->> 'path', length(r ->> 'path') + 1) = (r ->> 'path') || '/'
    )
), '');
