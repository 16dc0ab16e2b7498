ALTER TABLE "submission_defs" ADD COLUMN "root_values" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "submission_defs_root_values" ON "submission_defs" USING gin ("root_values" jsonb_path_ops) WHERE "submission_defs"."current";--> statement-breakpoint
-- Backfill: the values outside repeats of every stored version (first occurrence of a path wins).
UPDATE "submission_defs" SET "root_values" = coalesce((
  SELECT jsonb_object_agg(p, val) FROM (
    SELECT DISTINCT ON (v->>'path') v->>'path' AS p, v->'value' AS val
    FROM jsonb_array_elements("submission_defs"."values") WITH ORDINALITY AS e(v, n)
    WHERE jsonb_array_length(v->'repeatIndex') = 0
    ORDER BY v->>'path', n
  ) firsts
), '{}'::jsonb);
