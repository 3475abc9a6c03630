-- DBeaver's PostgreSQL plugin, the database of the connection (PostgreDataSource.DatabaseCache);
-- DBeaver binds the database name as a parameter, inlined here.
-- Source: dbeaver/dbeaver, plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreDataSource.java,
-- commit 005a1a1cb6e67fd5a92794ba7045ada7410f3365.
-- expect: postgres
SELECT db.oid,db.*
FROM pg_catalog.pg_database db WHERE NOT datistemplate AND datallowconn
AND db.datname='postgres';
