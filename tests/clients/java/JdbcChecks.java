// pgjdbc (Debian's libpostgresql-jdbc-java) against tarn or PostgreSQL 15, as tests/clients.rs
// runs it: DatabaseMetaData as DBeaver/Metabase/DataGrip browse with it, server-side prepared
// statements (prepareThreshold=1), update counts, batches, transactions. One line per check:
// `ok NAME` or `FAIL NAME: why`.
import java.math.BigDecimal;
import java.sql.*;
import java.util.*;

public class JdbcChecks {
    interface Check { void run(Connection c) throws Exception; }

    static final String T = "cl_jdbc_" + ProcessHandle.current().pid();

    static void expect(boolean cond, String message) {
        if (!cond) throw new AssertionError(message);
    }

    static Connection connect() throws SQLException {
        String url = "jdbc:postgresql://" + System.getenv("PGHOST") + ":" + System.getenv("PGPORT")
            + "/" + System.getenv("PGDATABASE") + "?prepareThreshold=1&connectTimeout=10&socketTimeout=60";
        return DriverManager.getConnection(url, System.getenv("PGUSER"), "");
    }

    public static void main(String[] args) {
        LinkedHashMap<String, Check> checks = new LinkedHashMap<>();
        checks.put("setup", c -> {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS " + T);
                s.execute("CREATE TABLE " + T + " (id integer PRIMARY KEY, name varchar(30) NOT NULL, "
                    + "price numeric(6,2), day date)");
            }
        });
        checks.put("update_counts_and_batches", c -> {
            try (PreparedStatement p = c.prepareStatement("INSERT INTO " + T + " VALUES (?, ?, ?, ?)")) {
                for (int i = 1; i <= 3; i++) {
                    p.setInt(1, i);
                    p.setString(2, "n" + i);
                    p.setBigDecimal(3, new BigDecimal("1.25").multiply(BigDecimal.valueOf(i)));
                    p.setDate(4, java.sql.Date.valueOf("2024-01-0" + i));
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                expect(Arrays.equals(counts, new int[] {1, 1, 1}), Arrays.toString(counts));
            }
            try (Statement s = c.createStatement()) {
                expect(s.executeUpdate("UPDATE " + T + " SET name = 'x' WHERE id >= 2") == 2, "UPDATE 2");
                expect(s.executeUpdate("DELETE FROM " + T + " WHERE id = 3") == 1, "DELETE 1");
            }
        });
        checks.put("prepared_statements", c -> {
            try (PreparedStatement p = c.prepareStatement("SELECT name, price FROM " + T + " WHERE id = ?")) {
                for (int i = 0; i < 3; i++) {
                    p.setInt(1, 1);
                    try (ResultSet r = p.executeQuery()) {
                        expect(r.next() && r.getString(1).equals("n1")
                            && r.getBigDecimal(2).compareTo(new BigDecimal("1.25")) == 0, "row 1");
                    }
                }
            }
        });
        checks.put("transactions", c -> {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO " + T + " (id, name) VALUES (9, 'gone')");
                c.rollback();
                try (ResultSet r = s.executeQuery("SELECT count(*) FROM " + T + " WHERE id = 9")) {
                    expect(r.next() && r.getLong(1) == 0, "rolled back");
                }
            } finally {
                c.setAutoCommit(true);
            }
        });
        checks.put("metadata_get_tables", c -> {
            try (ResultSet r = c.getMetaData().getTables(null, "public", T, new String[] {"TABLE"})) {
                expect(r.next() && r.getString("TABLE_NAME").equals(T), "getTables finds the table");
            }
        });
        checks.put("metadata_get_columns", c -> {
            Map<String, String> seen = new TreeMap<>();
            try (ResultSet r = c.getMetaData().getColumns(null, "public", T, null)) {
                while (r.next()) {
                    seen.put(r.getString("COLUMN_NAME"), r.getString("TYPE_NAME") + "/" + r.getInt("COLUMN_SIZE")
                        + "/" + r.getInt("DECIMAL_DIGITS") + "/" + r.getInt("NULLABLE"));
                }
            }
            expect(("int4/10/0/" + DatabaseMetaData.columnNoNulls).equals(seen.get("id")), "id: " + seen);
            expect(("varchar/30/0/" + DatabaseMetaData.columnNoNulls).equals(seen.get("name")), "name: " + seen);
            expect(("numeric/6/2/" + DatabaseMetaData.columnNullable).equals(seen.get("price")), "price: " + seen);
        });
        checks.put("metadata_get_primary_keys", c -> {
            try (ResultSet r = c.getMetaData().getPrimaryKeys(null, "public", T)) {
                expect(r.next() && r.getString("COLUMN_NAME").equals("id") && r.getInt("KEY_SEQ") == 1, "pk id");
                expect(!r.next(), "one key column");
            }
        });
        checks.put("metadata_get_index_info", c -> {
            try (ResultSet r = c.getMetaData().getIndexInfo(null, "public", T, true, false)) {
                expect(r.next() && r.getString("COLUMN_NAME").equals("id"), "unique index on id");
            }
        });
        checks.put("metadata_get_schemas_and_types", c -> {
            boolean publicFound = false;
            try (ResultSet r = c.getMetaData().getSchemas()) {
                while (r.next()) publicFound |= r.getString("TABLE_SCHEM").equals("public");
            }
            expect(publicFound, "getSchemas lists public");
            try (ResultSet r = c.getMetaData().getTypeInfo()) {
                expect(r.next(), "getTypeInfo has rows");
            }
        });
        checks.put("teardown", c -> {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE " + T);
            }
        });
        for (Map.Entry<String, Check> e : checks.entrySet()) {
            try (Connection c = connect()) {
                e.getValue().run(c);
                System.out.println("ok " + e.getKey());
            } catch (Throwable t) {
                String why = String.valueOf(t.getMessage()).replaceAll("\\s+", " ");
                System.out.println("FAIL " + e.getKey() + ": " + t.getClass().getSimpleName() + ": "
                    + why.substring(0, Math.min(300, why.length())));
            }
        }
    }
}
