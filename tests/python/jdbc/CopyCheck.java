// pgjdbc's CopyManager against a server: COPY FROM STDIN from a Reader (CSV), COPY TO STDOUT
// into a Writer, and a failing COPY whose SQLSTATE is printed. Run by test_copy_from.py with
// the port, user and database as arguments; prints what it saw, one fact per line.
import java.io.StringReader;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

public class CopyCheck {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/" + args[2];
        try (Connection conn = DriverManager.getConnection(url, args[1], "")) {
            try (Statement st = conn.createStatement()) {
                st.execute("drop table if exists jdbc_copy");
                st.execute("create table jdbc_copy (id int primary key, name text, born date)");
            }
            CopyManager copy = conn.unwrap(PGConnection.class).getCopyAPI();
            long in = copy.copyIn(
                "COPY jdbc_copy FROM STDIN (FORMAT csv, HEADER)",
                new StringReader("id,name,born\n1,\"a, b\",2000-01-02\n2,,\n"));
            System.out.println("in " + in);
            StringWriter out = new StringWriter();
            long n = copy.copyOut("COPY (SELECT * FROM jdbc_copy ORDER BY id) TO STDOUT (FORMAT csv)", out);
            System.out.println("out " + n);
            System.out.print(out);
            try {
                copy.copyIn("COPY jdbc_copy FROM STDIN", new StringReader("3\tc\tnot-a-date\n"));
                System.out.println("no error");
            } catch (SQLException e) {
                System.out.println("error " + e.getSQLState());
            }
            try (Statement st = conn.createStatement()) {
                var rs = st.executeQuery("select count(*) from jdbc_copy");
                rs.next();
                System.out.println("count " + rs.getLong(1));
            }
        }
    }
}
