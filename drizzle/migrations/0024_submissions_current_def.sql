-- From a version to its submission (a selective field filter: a few submission_defs rows by a field
-- index, then their submissions). A plain CREATE INDEX: it holds writes to submissions for its
-- build (2.3 s at 1,000,000 rows).
CREATE INDEX "submissions_current_def" ON "submissions" USING btree ("current_def_id");