-- A version's four large texts compressed with LZ4 instead of pglz (PostgreSQL's default): pglz was
-- 14 % of a PostgreSQL backend's CPU storing soak submissions (perf, 30 kB of text a row); LZ4
-- compresses several times faster for ~10 % more bytes. Applies to rows written from now on (a
-- metadata change, instant). Servers built without LZ4 (PGlite) keep pglz.
DO $$
BEGIN
  ALTER TABLE "submission_defs"
    ALTER COLUMN "xml" SET COMPRESSION lz4,
    ALTER COLUMN "values" SET COMPRESSION lz4,
    ALTER COLUMN "root_values" SET COMPRESSION lz4,
    ALTER COLUMN "root_text" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN NULL;
END $$;
