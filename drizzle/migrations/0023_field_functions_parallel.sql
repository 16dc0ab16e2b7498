-- fb_field_number without an exception block (a PL/pgSQL EXCEPTION starts a subtransaction, which
-- a parallel CREATE INDEX worker may not: the index build failed at 1,000,000 rows). The pattern
-- bounds the exponent and the length so the cast cannot overflow: never an error, inlinable, and
-- as fast as the inline cast.
CREATE OR REPLACE FUNCTION fb_field_number(t text) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN length(t) < 1000 AND t ~ '^\s*[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]{1,4})?\s*$' THEN t::numeric END
$$;--> statement-breakpoint
-- fb_field_time keeps its exception block (a date PostgreSQL refuses, 2021-02-30, must read as
-- null): parallel restricted, so index builds and scans over it stay in the leader.
ALTER FUNCTION fb_field_time(text) PARALLEL RESTRICTED;
