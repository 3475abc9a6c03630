-- Grafana's PostgreSQL data source, version probe (getVersion).
-- Source: grafana/grafana, public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts,
-- commit eb607c510fe9fe93ca209a4ca48935321fcd363f.
SELECT current_setting('server_version_num')::int/100 as version;
