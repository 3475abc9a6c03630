-- Metabase's PostgreSQL driver, the database's default time zone (db-default-timezone).
-- Source: metabase/metabase, src/metabase/driver/postgres.clj,
-- commit 370249b52907c64fb32de3739c1b2136abd9e960.
show timezone;
