-- Foreign keys of entities and entity versions checked once per statement instead of once per row
-- (issue 14: a bulk create of 10,000 entities fired 50,000 per-row RI checks, each an executor
-- run: 37 % of the backend's CPU; its rows share one Dataset, one creator and one source). A statement trigger reads the inserted rows
-- (transition table), locks their distinct parents FOR KEY SHARE as PostgreSQL's own check does
-- (a concurrent delete of a parent waits for this transaction; a parent already deleted is not
-- locked and then found missing), and raises 23503 with PostgreSQL's table, constraint and detail,
-- so lib/db/errors.ts answers as before. The parent side: a statement trigger on delete refuses to
-- delete a parent still named (NO ACTION, as before). Parent ids never change (GENERATED ALWAYS
-- identities), so no update trigger on the parent side; a child row whose key column changes is
-- checked by a row trigger that fires only then (never, today).
-- entity_defs.entity_id keeps its foreign key: one parent a row, nothing to share.
-- entity_defs.creator_id loses its key altogether: Central's entity_defs."creatorId" has none.
ALTER TABLE "entities" DROP CONSTRAINT "entities_dataset_id_datasets_id_fk";
--> statement-breakpoint
ALTER TABLE "entities" DROP CONSTRAINT "entities_creator_id_actors_id_fk";
--> statement-breakpoint
ALTER TABLE "entity_defs" DROP CONSTRAINT "entity_defs_source_id_entity_def_sources_id_fk";
--> statement-breakpoint
ALTER TABLE "entity_defs" DROP CONSTRAINT "entity_defs_creator_id_actors_id_fk";
--> statement-breakpoint
-- Child side, once per statement: each distinct parent of the inserted rows (`fb_new`) locked and
-- found, by a static query whose plan plpgsql keeps (a one-row insert, as from a submission, costs
-- a few index probes, not a planning).
CREATE FUNCTION fb_fk_violation(tbl text, col text, parent text, v text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE foreign_key_violation USING
    MESSAGE = format('insert or update on table "%s" violates foreign key constraint "%s_%s_%s_id_fk"', tbl, tbl, col, parent),
    DETAIL = format('Key (%s)=(%s) is not present in table "%s".', col, v, parent),
    TABLE = tbl,
    CONSTRAINT = format('%s_%s_%s_id_fk', tbl, col, parent);
END $$;
--> statement-breakpoint
CREATE FUNCTION fb_entities_fk_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v int;
BEGIN
  FOR v IN SELECT DISTINCT n.dataset_id FROM fb_new n LOOP
    PERFORM 1 FROM datasets p WHERE p.id = v FOR KEY SHARE OF p;
    IF NOT FOUND THEN PERFORM fb_fk_violation('entities', 'dataset_id', 'datasets', v::text); END IF;
  END LOOP;
  FOR v IN SELECT DISTINCT n.creator_id FROM fb_new n WHERE n.creator_id IS NOT NULL LOOP
    PERFORM 1 FROM actors p WHERE p.id = v FOR KEY SHARE OF p;
    IF NOT FOUND THEN PERFORM fb_fk_violation('entities', 'creator_id', 'actors', v::text); END IF;
  END LOOP;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION fb_entity_defs_fk_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v int;
BEGIN
  FOR v IN SELECT DISTINCT n.source_id FROM fb_new n WHERE n.source_id IS NOT NULL LOOP
    PERFORM 1 FROM entity_def_sources p WHERE p.id = v FOR KEY SHARE OF p;
    IF NOT FOUND THEN PERFORM fb_fk_violation('entity_defs', 'source_id', 'entity_def_sources', v::text); END IF;
  END LOOP;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Child side, a row whose key column changed (no code does this today). Arguments: one pair.
CREATE FUNCTION fb_fk_check_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  col text := TG_ARGV[0];
  parent text := TG_ARGV[1];
  v text := to_jsonb(NEW) ->> col;
  found_it int;
BEGIN
  IF v IS NULL THEN RETURN NULL; END IF;
  EXECUTE format('SELECT 1 FROM %I p WHERE p.id = $1::int FOR KEY SHARE OF p', parent) INTO found_it USING v;
  IF found_it IS NULL THEN
    RAISE foreign_key_violation USING
      MESSAGE = format('insert or update on table "%s" violates foreign key constraint "%s_%s_%s_id_fk"', TG_TABLE_NAME, TG_TABLE_NAME, col, parent),
      DETAIL = format('Key (%s)=(%s) is not present in table "%s".', col, v, parent),
      TABLE = TG_TABLE_NAME,
      CONSTRAINT = format('%s_%s_%s_id_fk', TG_TABLE_NAME, col, parent);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- Parent side, once per statement: refuses to delete a parent a child row still names.
-- Arguments: (child table, child key column). The transition table is `fb_old`.
CREATE FUNCTION fb_fk_check_old() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  child text := TG_ARGV[0];
  col text := TG_ARGV[1];
  named text;
BEGIN
  EXECUTE format('SELECT o.id::text FROM fb_old o WHERE EXISTS (SELECT 1 FROM %I c WHERE c.%I = o.id) LIMIT 1', child, col) INTO named;
  IF named IS NOT NULL THEN
    RAISE foreign_key_violation USING
      MESSAGE = format('update or delete on table "%s" violates foreign key constraint "%s_%s_%s_id_fk" on table "%s"', TG_TABLE_NAME, child, col, TG_TABLE_NAME, child),
      DETAIL = format('Key (id)=(%s) is still referenced from table "%s".', named, child),
      TABLE = child,
      CONSTRAINT = format('%s_%s_%s_id_fk', child, col, TG_TABLE_NAME);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER fb_entities_fk AFTER INSERT ON "entities" REFERENCING NEW TABLE AS fb_new
  FOR EACH STATEMENT EXECUTE FUNCTION fb_entities_fk_check();
--> statement-breakpoint
CREATE TRIGGER fb_entities_fk_dataset_update AFTER UPDATE OF "dataset_id" ON "entities"
  FOR EACH ROW WHEN (OLD.dataset_id IS DISTINCT FROM NEW.dataset_id) EXECUTE FUNCTION fb_fk_check_row('dataset_id', 'datasets');
--> statement-breakpoint
CREATE TRIGGER fb_entities_fk_creator_update AFTER UPDATE OF "creator_id" ON "entities"
  FOR EACH ROW WHEN (OLD.creator_id IS DISTINCT FROM NEW.creator_id) EXECUTE FUNCTION fb_fk_check_row('creator_id', 'actors');
--> statement-breakpoint
CREATE TRIGGER fb_entity_defs_fk AFTER INSERT ON "entity_defs" REFERENCING NEW TABLE AS fb_new
  FOR EACH STATEMENT EXECUTE FUNCTION fb_entity_defs_fk_check();
--> statement-breakpoint
CREATE TRIGGER fb_entity_defs_fk_source_update AFTER UPDATE OF "source_id" ON "entity_defs"
  FOR EACH ROW WHEN (OLD.source_id IS DISTINCT FROM NEW.source_id) EXECUTE FUNCTION fb_fk_check_row('source_id', 'entity_def_sources');
--> statement-breakpoint
CREATE TRIGGER fb_datasets_entities_fk AFTER DELETE ON "datasets" REFERENCING OLD TABLE AS fb_old
  FOR EACH STATEMENT EXECUTE FUNCTION fb_fk_check_old('entities', 'dataset_id');
--> statement-breakpoint
CREATE TRIGGER fb_actors_entities_fk AFTER DELETE ON "actors" REFERENCING OLD TABLE AS fb_old
  FOR EACH STATEMENT EXECUTE FUNCTION fb_fk_check_old('entities', 'creator_id');
--> statement-breakpoint
CREATE TRIGGER fb_entity_def_sources_entity_defs_fk AFTER DELETE ON "entity_def_sources" REFERENCING OLD TABLE AS fb_old
  FOR EACH STATEMENT EXECUTE FUNCTION fb_fk_check_old('entity_defs', 'source_id');
