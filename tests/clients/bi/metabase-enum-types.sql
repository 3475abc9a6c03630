-- Metabase's PostgreSQL driver, enum types fetched before describing a table (enum-types).
-- Source: metabase/metabase, src/metabase/driver/postgres.clj,
-- commit 370249b52907c64fb32de3739c1b2136abd9e960.
SELECT nspname, typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid IN (SELECT DISTINCT enumtypid FROM pg_enum e);
