-- DBeaver's PostgreSQL plugin, the schema list (PostgreDatabase.SchemaCache, no filter).
-- Source: dbeaver/dbeaver, plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreDatabase.java,
-- commit c994ba8f165c1f75288f6cfeefb9095b5cb04914.
-- expect: public
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid
 ORDER BY nspname;
