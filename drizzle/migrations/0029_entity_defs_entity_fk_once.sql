-- entity_defs.entity_id checked once per statement instead of once per row (issue 14: in a bulk
-- create of 10,000 entities the per-row RI check of the version rows against the entities just
-- inserted was the largest single cost after index maintenance, about a sixth of the backend's
-- CPU). The statement trigger of 0027 now also locks the distinct entities its rows name, FOR KEY
-- SHARE as PostgreSQL's own check does, in one index-driven query, and raises 23503 with the
-- constraint's name when one is missing (a concurrent purge waits for this transaction; an entity
-- already purged is not locked and then found missing). Parent side: a statement trigger refuses
-- to delete an entity a version still names (NO ACTION, as before).
ALTER TABLE "entity_defs" DROP CONSTRAINT "entity_defs_entity_id_entities_id_fk";
--> statement-breakpoint
CREATE OR REPLACE FUNCTION fb_entity_defs_fk_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v int;
  locked bigint;
  wanted bigint;
BEGIN
  FOR v IN SELECT DISTINCT n.source_id FROM fb_new n WHERE n.source_id IS NOT NULL LOOP
    PERFORM 1 FROM entity_def_sources p WHERE p.id = v FOR KEY SHARE OF p;
    IF NOT FOUND THEN PERFORM fb_fk_violation('entity_defs', 'source_id', 'entity_def_sources', v::text); END IF;
  END LOOP;
  -- One query: each distinct entity named, locked where it exists (an approval's one-row insert
  -- pays one statement here, as it paid one per-row check before).
  SELECT count(*), count(l.id) INTO wanted, locked
    FROM (SELECT DISTINCT n.entity_id FROM fb_new n) w
    LEFT JOIN LATERAL (SELECT p.id FROM entities p WHERE p.id = w.entity_id FOR KEY SHARE OF p) l ON true;
  IF locked < wanted THEN
    SELECT n.entity_id INTO v FROM fb_new n WHERE NOT EXISTS (SELECT 1 FROM entities p WHERE p.id = n.entity_id) LIMIT 1;
    PERFORM fb_fk_violation('entity_defs', 'entity_id', 'entities', v::text);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER fb_entity_defs_fk_entity_update AFTER UPDATE OF "entity_id" ON "entity_defs"
  FOR EACH ROW WHEN (OLD.entity_id IS DISTINCT FROM NEW.entity_id) EXECUTE FUNCTION fb_fk_check_row('entity_id', 'entities');
--> statement-breakpoint
CREATE TRIGGER fb_entities_entity_defs_fk AFTER DELETE ON "entities" REFERENCING OLD TABLE AS fb_old
  FOR EACH STATEMENT EXECUTE FUNCTION fb_fk_check_old('entity_defs', 'entity_id');
