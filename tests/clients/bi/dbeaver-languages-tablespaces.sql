-- DBeaver's PostgreSQL plugin, languages and tablespaces of a database (PostgreDatabase.LanguageCache,
-- TablespaceCache).
-- Source: dbeaver/dbeaver, plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreDatabase.java,
-- commit c994ba8f165c1f75288f6cfeefb9095b5cb04914.
-- expect: pg_default
SELECT l.oid,l.* FROM pg_catalog.pg_language l 
ORDER BY l.oid;
SELECT t.oid,t.* FROM pg_catalog.pg_tablespace t 
ORDER BY t.oid;
