-- A token per project that changes whenever anything an OpenRosa form list shows may have changed,
-- so that GET P/formList can serve a list it rendered before after one primary-key read (issue 21:
-- the list's own query, rights check and 200 rows, was nearly all of PostgreSQL's time per poll,
-- half of it planning). Written by statement triggers in the changing transaction, so a reader that
-- sees a token sees exactly the rows written with it, in any process (Workers and Lambda share no
-- memory; lib/forms/openrosa.ts keys its rendered lists by these tokens).
-- Row 0 is every project's: grants (assignments, roles) and truncations change it. A token is a
-- random 53-bit number, not a count, so a database restored to an older state never hands back a
-- value that stood for other rows. Rows are written in project id order (0 first) and grants
-- usually follow form changes in a transaction, so two writers do not wait on each other crosswise.
-- Raw SQL only (not in drizzle/schema): nothing but these triggers and lib/forms/openrosa.ts touches it.
CREATE TABLE "form_list_epochs" (
	"project_id" integer PRIMARY KEY NOT NULL,
	"epoch" bigint NOT NULL
);
--> statement-breakpoint
INSERT INTO "form_list_epochs" ("project_id", "epoch") VALUES (0, floor(random() * 9007199254740991)::bigint);
--> statement-breakpoint
CREATE FUNCTION fb_form_list_bump(ids integer[]) RETURNS void LANGUAGE sql AS $$
  INSERT INTO form_list_epochs AS e (project_id, epoch)
    SELECT p, floor(random() * 9007199254740991)::bigint FROM (SELECT DISTINCT unnest(ids) AS p) s WHERE p IS NOT NULL ORDER BY p
  ON CONFLICT (project_id) DO UPDATE SET epoch = excluded.epoch
$$;
--> statement-breakpoint
-- forms and projects: the rows' own project ids (old and new: a moved or deleted row counts for both).
CREATE FUNCTION fb_form_list_forms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN PERFORM fb_form_list_bump(array(SELECT project_id FROM fb_new));
  ELSIF TG_OP = 'UPDATE' THEN PERFORM fb_form_list_bump(array(SELECT project_id FROM fb_new UNION SELECT project_id FROM fb_old));
  ELSIF TG_OP = 'DELETE' THEN PERFORM fb_form_list_bump(array(SELECT project_id FROM fb_old));
  ELSE PERFORM fb_form_list_bump(array[0]);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE FUNCTION fb_form_list_projects() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN PERFORM fb_form_list_bump(array(SELECT id FROM fb_new UNION SELECT id FROM fb_old));
  ELSIF TG_OP = 'DELETE' THEN PERFORM fb_form_list_bump(array(SELECT id FROM fb_old));
  ELSE PERFORM fb_form_list_bump(array[0]);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- form_defs and form_attachments: the project of the form each row belongs to (by form_id; a form
-- deleted in the same statement has bumped its project itself).
CREATE FUNCTION fb_form_list_form_children() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM fb_form_list_bump(array(SELECT f.project_id FROM forms f WHERE f.id IN (SELECT form_id FROM fb_new)));
  ELSIF TG_OP = 'UPDATE' THEN
    PERFORM fb_form_list_bump(array(SELECT f.project_id FROM forms f WHERE f.id IN (SELECT form_id FROM fb_new UNION SELECT form_id FROM fb_old)));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM fb_form_list_bump(array(SELECT f.project_id FROM forms f WHERE f.id IN (SELECT form_id FROM fb_old)));
  ELSE PERFORM fb_form_list_bump(array[0]);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
-- assignments and roles: row 0 (a grant's actee may be '*', a species, a project or a form).
CREATE FUNCTION fb_form_list_grants() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM fb_form_list_bump(array[0]);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER fb_form_list_forms_insert AFTER INSERT ON forms REFERENCING NEW TABLE AS fb_new FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_forms();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_forms_update AFTER UPDATE ON forms REFERENCING OLD TABLE AS fb_old NEW TABLE AS fb_new FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_forms();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_forms_delete AFTER DELETE ON forms REFERENCING OLD TABLE AS fb_old FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_forms();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_forms_truncate AFTER TRUNCATE ON forms FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_forms();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_projects_update AFTER UPDATE ON projects REFERENCING OLD TABLE AS fb_old NEW TABLE AS fb_new FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_projects();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_projects_delete AFTER DELETE ON projects REFERENCING OLD TABLE AS fb_old FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_projects();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_projects_truncate AFTER TRUNCATE ON projects FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_projects();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_form_defs_insert AFTER INSERT ON form_defs REFERENCING NEW TABLE AS fb_new FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_form_children();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_form_defs_update AFTER UPDATE ON form_defs REFERENCING OLD TABLE AS fb_old NEW TABLE AS fb_new FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_form_children();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_form_defs_delete AFTER DELETE ON form_defs REFERENCING OLD TABLE AS fb_old FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_form_children();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_form_defs_truncate AFTER TRUNCATE ON form_defs FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_form_children();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_form_attachments_insert AFTER INSERT ON form_attachments REFERENCING NEW TABLE AS fb_new FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_form_children();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_form_attachments_update AFTER UPDATE ON form_attachments REFERENCING OLD TABLE AS fb_old NEW TABLE AS fb_new FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_form_children();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_form_attachments_delete AFTER DELETE ON form_attachments REFERENCING OLD TABLE AS fb_old FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_form_children();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_form_attachments_truncate AFTER TRUNCATE ON form_attachments FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_form_children();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_assignments AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON assignments FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_grants();
--> statement-breakpoint
CREATE TRIGGER fb_form_list_roles AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON roles FOR EACH STATEMENT EXECUTE FUNCTION fb_form_list_grants();
