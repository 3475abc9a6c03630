// pgjdbc's DatabaseMetaData over two tables, printed line by line so that the output of tarn
// and of PostgreSQL 15 can be compared. Run by tests/jdbc.rs:
//   java -cp postgresql.jar:. CatalogMetaData jdbc:postgresql://127.0.0.1:PORT/DB USER
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;

public class CatalogMetaData {
    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0], args[1], "")) {
            try (Statement s = c.createStatement()) {
                s.execute("drop table if exists jdbc_orders");
                s.execute("drop table if exists jdbc_lines");
                s.execute("create table jdbc_orders (id int primary key, name varchar(20) not null,"
                        + " amount numeric(6,2), note text, created timestamp, big bigint not null)");
                s.execute("create table jdbc_lines (order_id int, line int, sku char(8),"
                        + " qty bigint not null, primary key (order_id, line))");
            }
            DatabaseMetaData md = c.getMetaData();
            for (String t : new String[] {"jdbc_orders", "jdbc_lines"}) {
                try (ResultSet rs = md.getTables(null, "public", t, new String[] {"TABLE"})) {
                    while (rs.next()) {
                        System.out.println("table " + rs.getString("TABLE_SCHEM") + "."
                                + rs.getString("TABLE_NAME") + " " + rs.getString("TABLE_TYPE"));
                    }
                }
                try (ResultSet rs = md.getColumns(null, "public", t, null)) {
                    while (rs.next()) {
                        System.out.println("column " + rs.getString("TABLE_NAME") + "."
                                + rs.getString("COLUMN_NAME")
                                + " type=" + rs.getInt("DATA_TYPE")
                                + " " + rs.getString("TYPE_NAME")
                                + " size=" + rs.getInt("COLUMN_SIZE")
                                + " digits=" + rs.getInt("DECIMAL_DIGITS")
                                + " nullable=" + rs.getInt("NULLABLE")
                                + " is_nullable=" + rs.getString("IS_NULLABLE")
                                + " position=" + rs.getInt("ORDINAL_POSITION"));
                    }
                }
                try (ResultSet rs = md.getPrimaryKeys(null, "public", t)) {
                    while (rs.next()) {
                        System.out.println("pk " + rs.getString("TABLE_NAME") + "."
                                + rs.getString("COLUMN_NAME") + " seq=" + rs.getInt("KEY_SEQ")
                                + " name=" + rs.getString("PK_NAME"));
                    }
                }
                try (ResultSet rs = md.getIndexInfo(null, "public", t, false, false)) {
                    while (rs.next()) {
                        System.out.println("index " + rs.getString("TABLE_NAME") + "."
                                + rs.getString("INDEX_NAME")
                                + " non_unique=" + rs.getBoolean("NON_UNIQUE")
                                + " position=" + rs.getInt("ORDINAL_POSITION")
                                + " column=" + rs.getString("COLUMN_NAME")
                                + " order=" + rs.getString("ASC_OR_DESC"));
                    }
                }
            }
            try (Statement s = c.createStatement()) {
                s.execute("drop table jdbc_orders");
                s.execute("drop table jdbc_lines");
            }
        }
    }
}
