-- Grafana's PostgreSQL data source, column list of a table (getSchema('cl_orders')).
-- Source: grafana/grafana, public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts,
-- commit eb607c510fe9fe93ca209a4ca48935321fcd363f. The table name is the one Grafana inserts.
-- expect: customer|text
-- expect: amount|numeric
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('cl_orders'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('cl_orders'))[1]
          AND quote_ident(table_name) = (parse_ident('cl_orders'))[2]
        ELSE quote_ident(table_name) = 'cl_orders'
          AND
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END;
