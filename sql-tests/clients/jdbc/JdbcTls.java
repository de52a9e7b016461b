import java.sql.*;
import java.util.Properties;

/**
 * pgjdbc over TLS: sslmode=require (encrypted, certificate not checked) and verify-full
 * (certificate chain against a PEM root and host name checked). The server runs with
 * --require-tls, so an answer at all means the connection was encrypted; a plain
 * connection must be refused with 28000.
 */
public class JdbcTls {
    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    static int readSecret(String url, Properties p) throws SQLException {
        try (Connection c = DriverManager.getConnection(url, p);
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT x FROM secret")) {
            check(rs.next(), "a row from secret");
            return rs.getInt(1);
        }
    }

    public static void main(String[] args) throws Exception {
        String port = args[0], rootCert = args[1];
        Properties p = new Properties();
        p.setProperty("user", "brook");
        p.setProperty("sslmode", "require");
        check(readSecret("jdbc:postgresql://127.0.0.1:" + port + "/brook", p) == 1, "sslmode=require");

        p.setProperty("sslmode", "verify-full");
        p.setProperty("sslrootcert", rootCert);
        check(readSecret("jdbc:postgresql://localhost:" + port + "/brook", p) == 1, "sslmode=verify-full");

        p.setProperty("sslmode", "disable");
        p.remove("sslrootcert");
        try {
            readSecret("jdbc:postgresql://127.0.0.1:" + port + "/brook", p);
            throw new AssertionError("a plain connection was accepted under --require-tls");
        } catch (SQLException e) {
            check("28000".equals(e.getSQLState()), "plain connection: 28000, got " + e.getSQLState() + " " + e.getMessage());
        }
        System.out.println("jdbc tls: ok");
    }
}
