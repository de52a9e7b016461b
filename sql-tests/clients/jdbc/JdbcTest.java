import java.io.StringReader;
import java.sql.*;
import java.util.*;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

/** pgjdbc against Brook: metadata, prepared statements, batches, COPY, fetch size, errors. */
public class JdbcTest {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/brook";
        try (Connection c = DriverManager.getConnection(url, "brook", "")) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE j (id int PRIMARY KEY, name varchar(20), price numeric(10,2), at timestamp)");
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO j VALUES (?, ?, ?, ?)")) {
                for (int i = 1; i <= 10; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "n" + i);
                    ps.setBigDecimal(3, new java.math.BigDecimal(i + ".25"));
                    ps.setTimestamp(4, Timestamp.valueOf("2026-01-01 00:00:0" + (i % 10)));
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                check(counts.length == 10, "batch counts");
            }
            // the same prepared statement, many executions (pgjdbc switches to server-side prepare and binary)
            try (PreparedStatement ps = c.prepareStatement("SELECT name, price FROM j WHERE id = ?")) {
                for (int k = 0; k < 7; k++) {
                    ps.setInt(1, 3);
                    try (ResultSet rs = ps.executeQuery()) {
                        check(rs.next(), "row for id 3");
                        check("n3".equals(rs.getString(1)), "name n3, got " + rs.getString(1));
                        check(new java.math.BigDecimal("3.25").equals(rs.getBigDecimal(2)), "price 3.25, got " + rs.getBigDecimal(2));
                        check(!rs.next(), "one row");
                    }
                }
            }
            CopyManager cm = ((PGConnection) c.unwrap(PGConnection.class)).getCopyAPI();
            long n = cm.copyIn("COPY j (id, name) FROM STDIN WITH (FORMAT csv)", new StringReader("11,eleven\n12,twelve\n"));
            check(n == 2, "copy count " + n);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM j")) {
                rs.next();
                check(rs.getLong(1) == 12, "count 12");
                check(rs.getMetaData().getColumnName(1).equals("count"), "column name count");
            }
            DatabaseMetaData md = c.getMetaData();
            boolean found = false;
            try (ResultSet rs = md.getTables(null, "public", "j", new String[] {"TABLE"})) {
                while (rs.next()) found |= rs.getString("TABLE_NAME").equals("j");
            }
            check(found, "getTables lists j");
            List<String> cols = new ArrayList<>();
            try (ResultSet rs = md.getColumns(null, "public", "j", null)) {
                while (rs.next()) cols.add(rs.getString("COLUMN_NAME"));
            }
            check(cols.equals(Arrays.asList("id", "name", "price", "at")), "getColumns " + cols);
            // fetch size streams through a portal (autocommit off, as pgjdbc requires)
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.setFetchSize(3);
                int rows = 0;
                try (ResultSet rs = s.executeQuery("SELECT id FROM j ORDER BY id")) {
                    while (rs.next()) rows++;
                }
                check(rows == 12, "fetched 12 rows, got " + rows);
            }
            c.commit();
            // a continuous query (EMIT CHANGES) streams through the portal: each next() yields
            // rows as they are committed by another connection
            try (Connection w = DriverManager.getConnection(url, "brook", "");
                 Statement ws = w.createStatement();
                 Statement s = c.createStatement()) {
                ws.execute("CREATE STREAM jticks (sym text, px int)");
                ws.execute("INSERT INTO jticks VALUES ('A', 1)");
                s.setFetchSize(1);
                try (ResultSet rs = s.executeQuery("SELECT sym, px * 10 AS px10 FROM jticks EMIT CHANGES")) {
                    check(rs.next(), "history row");
                    check(rs.getInt("px10") == 10, "px10 10, got " + rs.getInt("px10"));
                    ws.execute("INSERT INTO jticks VALUES ('B', 2)");
                    check(rs.next(), "live row");
                    check("B".equals(rs.getString(1)) && rs.getInt(2) == 20, "live row B 20");
                    ws.execute("INSERT INTO jticks VALUES ('C', 3)");
                    check(rs.next(), "second live row");
                    check(rs.getInt(2) == 30, "px10 30");
                    s.cancel();
                }
            } catch (SQLException e) {
                check("57014".equals(e.getSQLState()), "continuous portal: " + e.getSQLState() + " " + e.getMessage());
            }
            c.rollback();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT * FROM missing_table");
                check(false, "expected an error");
            } catch (SQLException e) {
                check("42P01".equals(e.getSQLState()), "SQLSTATE 42P01, got " + e.getSQLState());
            }
        }
        System.out.println("jdbc: all checks passed");
    }
}
