import java.math.BigDecimal;
import java.sql.*;
import java.time.*;
import java.util.*;

/**
 * pgjdbc's DatabaseMetaData, ResultSetMetaData, typed parameters and updatable result sets,
 * called the way DBeaver, DataGrip and Metabase call them. Every expected value is what
 * pgjdbc returns against PostgreSQL 16+ (run with a second argument "postgres" against a real
 * PostgreSQL to check: the stream is then a plain table). Each call is a separate check; all
 * run, failures are listed at the end and make the exit status 1. Checks named in the
 * environment variable BROOK_JDBC_KNOWN_GAPS (one name a line, '#' starts a comment) are
 * Brook's known gaps: their failure is listed but does not fail the run, and their passing
 * does (take the name out of the list).
 *
 * Usage: java JdbcMetadata PORT [postgres]
 */
public class JdbcMetadata {
    interface Body { void run() throws Exception; }

    static final List<String> failures = new ArrayList<>();
    static final List<String> gaps = new ArrayList<>();
    static int passed = 0;
    static final Set<String> known = knownGaps();

    static Set<String> knownGaps() {
        Set<String> out = new HashSet<>();
        String list = System.getenv("BROOK_JDBC_KNOWN_GAPS");
        if (list == null) return out;
        for (String line : list.split("\n")) {
            String name = line.split("#", 2)[0].trim();
            if (!name.isEmpty()) out.add(name);
        }
        return out;
    }

    static void check(String name, Body b) {
        try {
            b.run();
            if (known.contains(name)) {
                failures.add(name + ": passes now; take it out of BROOK_JDBC_KNOWN_GAPS");
                System.out.println("FIXED " + name);
                return;
            }
            passed++;
            System.out.println("PASS " + name);
        } catch (Throwable e) {
            String msg = e instanceof SQLException
                    ? "SQLException [" + ((SQLException) e).getSQLState() + "] " + e.getMessage()
                    : e.toString();
            if (known.contains(name)) {
                gaps.add(name + ": " + msg);
                System.out.println("KNOWN GAP " + name + ": " + msg);
                return;
            }
            failures.add(name + ": " + msg);
            System.out.println("FAIL " + name + ": " + msg);
        }
    }

    static void ok(boolean cond, String what) {
        if (!cond) throw new AssertionError(what);
    }

    static void eq(Object expected, Object actual, String what) {
        if (!Objects.equals(expected, actual))
            throw new AssertionError(what + ": expected <" + expected + "> got <" + actual + ">");
    }

    /** The named columns of every row, read with getString (a missing column throws). */
    static List<Map<String, String>> rows(ResultSet rs, String... cols) throws SQLException {
        List<Map<String, String>> out = new ArrayList<>();
        try (rs) {
            while (rs.next()) {
                Map<String, String> m = new LinkedHashMap<>();
                for (String c : cols) m.put(c, rs.getString(c));
                out.add(m);
            }
        }
        return out;
    }

    static Map<String, String> only(List<Map<String, String>> rows, String key, String value) {
        Map<String, String> found = null;
        for (Map<String, String> r : rows)
            if (value.equals(r.get(key))) {
                ok(found == null, "more than one row with " + key + "=" + value + ": " + rows);
                found = r;
            }
        ok(found != null, "no row with " + key + "=" + value + " in " + rows);
        return found;
    }

    static List<String> column(List<Map<String, String>> rows, String key) {
        List<String> out = new ArrayList<>();
        for (Map<String, String> r : rows) out.add(r.get(key));
        return out;
    }

    /** Expected values: pairs of column name, value (null: SQL NULL). */
    static void expectRow(Map<String, String> row, String what, String... kv) {
        for (int i = 0; i < kv.length; i += 2) eq(kv[i + 1], row.get(kv[i]), what + " " + kv[i]);
    }

    public static void main(String[] args) throws Exception {
        boolean pg = args.length > 1 && args[1].equals("postgres");
        // -Dbrook.urlparams=loggerLevel=TRACE shows the SQL pgjdbc sends
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/brook?" + System.getProperty("brook.urlparams", "");
        Connection c = DriverManager.getConnection(url, "brook", "");
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE items (id int PRIMARY KEY, name varchar(32) NOT NULL DEFAULT 'x', "
                    + "price numeric(10,2), u uuid, t time, created timestamp)");
            s.execute(pg ? "CREATE TABLE ev (k int, ts timestamp)"
                         : "CREATE STREAM ev (k int, ts timestamp, WATERMARK FOR ts AS ts - INTERVAL '1 second')");
            s.execute("CREATE MATERIALIZED VIEW items_mv AS SELECT name, count(*) AS n FROM items GROUP BY name");
            s.execute("CREATE VIEW items_v AS SELECT id, name FROM items");
            s.execute("CREATE TABLE typed (id int PRIMARY KEY, d date, lt time, odt timestamptz, ldt timestamp, arr int[])");
            s.execute("CREATE TABLE extra (id int PRIMARY KEY, dur interval, doc jsonb, code char(3))");
            s.execute("INSERT INTO extra VALUES (1, INTERVAL '1 day 2 hours', '{\"a\": 1}', 'ab')");
            s.execute("COMMENT ON TABLE items IS 'the items'");
            s.execute("COMMENT ON COLUMN items.price IS 'unit price'");
            s.execute("CREATE FUNCTION add1(x int) RETURNS int AS 'SELECT x + 1' LANGUAGE sql");
            s.execute("INSERT INTO items VALUES (1, 'one', 1.50, '11111111-2222-3333-4444-555555555555', "
                    + "'10:11:12', '2026-01-02 03:04:05'), (2, 'two', 2.25, NULL, NULL, NULL)");
        }
        DatabaseMetaData md = c.getMetaData();

        // ---------------------------------------------------------------- product, keywords, limits
        check("getDatabaseProductName", () -> eq("PostgreSQL", md.getDatabaseProductName(), "product"));
        check("getDatabaseMajorVersion", () -> ok(md.getDatabaseMajorVersion() >= 9, "major " + md.getDatabaseMajorVersion()));
        check("getUserName", () -> eq("brook", md.getUserName(), "user"));
        check("getIdentifierQuoteString", () -> eq("\"", md.getIdentifierQuoteString(), "quote"));
        check("getSQLKeywords", () -> {
            // pgjdbc reads pg_catalog.pg_get_keywords() (DBeaver calls this on connect)
            String kw = md.getSQLKeywords();
            List<String> words = Arrays.asList(kw.split(","));
            ok(words.contains("analyze") && words.contains("limit") && words.contains("offset"), "keywords " + kw);
        });
        check("getMaxColumnNameLength", () -> eq(63, md.getMaxColumnNameLength(), "max column name length"));
        check("getMaxTableNameLength", () -> eq(63, md.getMaxTableNameLength(), "max table name length"));
        check("getDefaultTransactionIsolation", () ->
                eq(Connection.TRANSACTION_READ_COMMITTED, md.getDefaultTransactionIsolation(), "isolation"));
        check("Connection.getTransactionIsolation", () ->
                eq(Connection.TRANSACTION_READ_COMMITTED, c.getTransactionIsolation(), "isolation"));

        // ---------------------------------------------------------------- catalogs, schemas, types
        check("getCatalogs", () -> {
            List<String> cats = column(rows(md.getCatalogs(), "TABLE_CAT"), "TABLE_CAT");
            ok(cats.contains("brook"), "catalogs " + cats);
        });
        check("getSchemas()", () -> {
            List<Map<String, String>> r = rows(md.getSchemas(), "TABLE_SCHEM", "TABLE_CATALOG");
            List<String> names = column(r, "TABLE_SCHEM");
            ok(names.containsAll(Arrays.asList("public", "pg_catalog", "information_schema")), "schemas " + names);
            // pgjdbc 42.5 selects NULL AS TABLE_CATALOG
            eq(null, only(r, "TABLE_SCHEM", "public").get("TABLE_CATALOG"), "TABLE_CATALOG of public");
        });
        check("getSchemas(null, \"pub%\")", () -> {
            List<String> names = column(rows(md.getSchemas(null, "pub%"), "TABLE_SCHEM"), "TABLE_SCHEM");
            eq(Arrays.asList("public"), names, "schemas like pub%");
        });
        check("getTableTypes", () -> {
            List<String> types = column(rows(md.getTableTypes(), "TABLE_TYPE"), "TABLE_TYPE");
            ok(types.containsAll(Arrays.asList("TABLE", "VIEW", "MATERIALIZED VIEW", "SYSTEM TABLE")), "types " + types);
        });
        check("getClientInfoProperties", () -> {
            List<String> names = column(rows(md.getClientInfoProperties(), "NAME"), "NAME");
            eq(Arrays.asList("ApplicationName"), names, "client info properties");
        });
        check("setClientInfo(ApplicationName) then SHOW application_name", () -> {
            c.setClientInfo("ApplicationName", "brook-jdbc-meta");
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW application_name")) {
                ok(rs.next(), "a row");
                eq("brook-jdbc-meta", rs.getString(1), "SHOW application_name");
            }
        });
        check("getClientInfo(ApplicationName) (ParameterStatus after SET)", () -> {
            // pgjdbc answers from the application_name ParameterStatus the server reports after SET
            eq("brook-jdbc-meta", c.getClientInfo("ApplicationName"), "getClientInfo");
        });

        // ---------------------------------------------------------------- getTables
        String tcols[] = {"TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE", "REMARKS"};
        check("getTables(all types)", () -> {
            List<Map<String, String>> r = rows(md.getTables(null, "public", "%", null), tcols);
            expectRow(only(r, "TABLE_NAME", "items"), "items", "TABLE_SCHEM", "public", "TABLE_TYPE", "TABLE",
                    "REMARKS", "the items");
            expectRow(only(r, "TABLE_NAME", "items_mv"), "items_mv", "TABLE_TYPE", "MATERIALIZED VIEW");
            expectRow(only(r, "TABLE_NAME", "items_v"), "items_v", "TABLE_TYPE", "VIEW");
            // a stream is a table to a client that knows only PostgreSQL's relkinds
            expectRow(only(r, "TABLE_NAME", "ev"), "ev", "TABLE_TYPE", "TABLE");
            expectRow(only(r, "TABLE_NAME", "items_pkey"), "items_pkey", "TABLE_TYPE", "INDEX");
            for (Map<String, String> row : r) ok(row.get("TABLE_TYPE") != null, "TABLE_TYPE null in " + row);
        });
        check("getTables(TABLE)", () -> {
            List<String> names = column(rows(md.getTables(null, "public", "%", new String[] {"TABLE"}), tcols), "TABLE_NAME");
            eq(Arrays.asList("ev", "extra", "items", "typed"), names, "tables");
        });
        check("getTables(MATERIALIZED VIEW)", () -> {
            List<String> names = column(rows(md.getTables(null, "public", null, new String[] {"MATERIALIZED VIEW"}), tcols), "TABLE_NAME");
            eq(Arrays.asList("items_mv"), names, "materialized views");
        });
        check("getTables(Metabase types)", () -> {
            String[] types = {"TABLE", "PARTITIONED TABLE", "VIEW", "FOREIGN TABLE", "MATERIALIZED VIEW"};
            List<Map<String, String>> r = rows(md.getTables(null, "public", "%", types), tcols);
            List<String> names = column(r, "TABLE_NAME");
            Collections.sort(names);
            eq(Arrays.asList("ev", "extra", "items", "items_mv", "items_v", "typed"), names, "relations");
        });
        check("getTables(catalog brook, exact name)", () -> {
            List<Map<String, String>> r = rows(md.getTables("brook", "public", "items", null), tcols);
            eq(1, r.size(), "rows " + r);
        });
        check("getTables(SYSTEM TABLE, pg_catalog)", () -> {
            List<String> names = column(rows(md.getTables(null, "pg_catalog", "pg_cl%", new String[] {"SYSTEM TABLE"}), tcols), "TABLE_NAME");
            eq(Arrays.asList("pg_class"), names, "system tables");
        });

        // ---------------------------------------------------------------- getColumns
        String ccols[] = {"TABLE_SCHEM", "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "COLUMN_SIZE",
                "DECIMAL_DIGITS", "NUM_PREC_RADIX", "NULLABLE", "REMARKS", "COLUMN_DEF", "CHAR_OCTET_LENGTH",
                "ORDINAL_POSITION", "IS_NULLABLE", "IS_AUTOINCREMENT", "IS_GENERATEDCOLUMN"};
        check("getColumns(items)", () -> {
            List<Map<String, String>> r = rows(md.getColumns(null, "public", "items", null), ccols);
            eq(Arrays.asList("id", "name", "price", "u", "t", "created"), column(r, "COLUMN_NAME"), "columns");
            expectRow(r.get(0), "id", "DATA_TYPE", "4", "TYPE_NAME", "int4", "COLUMN_SIZE", "10", "DECIMAL_DIGITS", "0",
                    "NUM_PREC_RADIX", "10", "NULLABLE", "0", "IS_NULLABLE", "NO", "COLUMN_DEF", null,
                    "ORDINAL_POSITION", "1", "IS_AUTOINCREMENT", "NO", "IS_GENERATEDCOLUMN", "NO");
            expectRow(r.get(1), "name", "DATA_TYPE", "12", "TYPE_NAME", "varchar", "COLUMN_SIZE", "32",
                    "DECIMAL_DIGITS", "0", "NULLABLE", "0", "IS_NULLABLE", "NO", "CHAR_OCTET_LENGTH", "32",
                    "ORDINAL_POSITION", "2");
            // PostgreSQL says 'x'::character varying; Brook keeps the literal as written
            String def = r.get(1).get("COLUMN_DEF");
            ok(def != null && (def.equals("'x'") || def.equals("'x'::character varying")), "name COLUMN_DEF <" + def + ">");
            expectRow(r.get(2), "price", "DATA_TYPE", "2", "TYPE_NAME", "numeric", "COLUMN_SIZE", "10",
                    "DECIMAL_DIGITS", "2", "NULLABLE", "1", "IS_NULLABLE", "YES", "REMARKS", "unit price", "COLUMN_DEF", null);
            expectRow(r.get(3), "u", "DATA_TYPE", "1111", "TYPE_NAME", "uuid", "COLUMN_SIZE", "2147483647",
                    "IS_NULLABLE", "YES");
            expectRow(r.get(4), "t", "DATA_TYPE", "92", "TYPE_NAME", "time", "COLUMN_SIZE", "15", "DECIMAL_DIGITS", "6");
            expectRow(r.get(5), "created", "DATA_TYPE", "93", "TYPE_NAME", "timestamp", "COLUMN_SIZE", "29",
                    "DECIMAL_DIGITS", "6", "ORDINAL_POSITION", "6");
        });
        check("getColumns(typed)", () -> {
            List<Map<String, String>> r = rows(md.getColumns(null, "public", "typed", null), ccols);
            eq(Arrays.asList("id", "d", "lt", "odt", "ldt", "arr"), column(r, "COLUMN_NAME"), "columns");
            expectRow(r.get(1), "d", "DATA_TYPE", "91", "TYPE_NAME", "date", "COLUMN_SIZE", "13");
            expectRow(r.get(3), "odt", "DATA_TYPE", "93", "TYPE_NAME", "timestamptz", "COLUMN_SIZE", "35");
            expectRow(r.get(5), "arr", "DATA_TYPE", "2003", "TYPE_NAME", "_int4");
        });
        check("getColumns(extra: interval, jsonb, char(3))", () -> {
            // pgjdbc maps types outside its built-in list (interval, jsonb) with its TypeInfoCache query
            List<Map<String, String>> r = rows(md.getColumns(null, "public", "extra", null), ccols);
            eq(Arrays.asList("id", "dur", "doc", "code"), column(r, "COLUMN_NAME"), "columns");
            expectRow(r.get(1), "dur", "DATA_TYPE", "1111", "TYPE_NAME", "interval", "COLUMN_SIZE", "49");
            expectRow(r.get(2), "doc", "DATA_TYPE", "1111", "TYPE_NAME", "jsonb");
            expectRow(r.get(3), "code", "DATA_TYPE", "1", "TYPE_NAME", "bpchar", "COLUMN_SIZE", "3");
        });
        check("getColumns(stream ev)", () -> {
            List<Map<String, String>> r = rows(md.getColumns(null, "public", "ev", null), ccols);
            eq(Arrays.asList("k", "ts"), column(r, "COLUMN_NAME"), "columns");
            expectRow(r.get(0), "k", "DATA_TYPE", "4", "TYPE_NAME", "int4");
            expectRow(r.get(1), "ts", "DATA_TYPE", "93", "TYPE_NAME", "timestamp");
        });
        check("getColumns(materialized view items_mv)", () -> {
            List<Map<String, String>> r = rows(md.getColumns(null, "public", "items_mv", null), ccols);
            eq(Arrays.asList("name", "n"), column(r, "COLUMN_NAME"), "columns");
            expectRow(r.get(0), "name", "DATA_TYPE", "12", "TYPE_NAME", "varchar", "COLUMN_SIZE", "32");
            expectRow(r.get(1), "n", "DATA_TYPE", "-5", "TYPE_NAME", "int8", "COLUMN_SIZE", "19");
        });
        check("getColumns(view items_v)", () -> {
            List<Map<String, String>> r = rows(md.getColumns(null, "public", "items_v", null), ccols);
            eq(Arrays.asList("id", "name"), column(r, "COLUMN_NAME"), "columns");
            expectRow(r.get(1), "name", "TYPE_NAME", "varchar", "COLUMN_SIZE", "32");
        });
        check("getColumns(column pattern pr%)", () -> {
            List<String> names = column(rows(md.getColumns(null, "public", "items", "pr%"), ccols), "COLUMN_NAME");
            eq(Arrays.asList("price"), names, "columns like pr%");
        });

        // ---------------------------------------------------------------- keys, indexes, row ids
        check("getPrimaryKeys", () -> {
            List<Map<String, String>> r = rows(md.getPrimaryKeys(null, "public", "items"),
                    "TABLE_SCHEM", "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME");
            eq(1, r.size(), "rows " + r);
            expectRow(r.get(0), "pk", "TABLE_SCHEM", "public", "TABLE_NAME", "items", "COLUMN_NAME", "id",
                    "KEY_SEQ", "1", "PK_NAME", "items_pkey");
        });
        check("getPrimaryKeys(no pk: ev)", () -> eq(0, rows(md.getPrimaryKeys(null, "public", "ev"), "COLUMN_NAME").size(), "rows"));
        String icols[] = {"TABLE_NAME", "NON_UNIQUE", "INDEX_QUALIFIER", "INDEX_NAME", "TYPE", "ORDINAL_POSITION",
                "COLUMN_NAME", "ASC_OR_DESC", "CARDINALITY", "PAGES", "FILTER_CONDITION"};
        check("getIndexInfo(items, unique=false)", () -> {
            List<Map<String, String>> r = rows(md.getIndexInfo(null, "public", "items", false, true), icols);
            expectRow(only(r, "INDEX_NAME", "items_pkey"), "items_pkey", "TABLE_NAME", "items", "NON_UNIQUE", "f",
                    "TYPE", "3", "ORDINAL_POSITION", "1", "COLUMN_NAME", "id", "ASC_OR_DESC", "A");
        });
        check("getIndexInfo(items, unique=true)", () -> {
            List<Map<String, String>> r = rows(md.getIndexInfo(null, "public", "items", true, true), icols);
            eq(Arrays.asList("items_pkey"), column(r, "INDEX_NAME"), "unique indexes");
        });
        check("getBestRowIdentifier", () -> {
            List<Map<String, String>> r = rows(md.getBestRowIdentifier(null, "public", "items",
                    DatabaseMetaData.bestRowSession, true), "SCOPE", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "PSEUDO_COLUMN");
            eq(1, r.size(), "rows " + r);
            expectRow(r.get(0), "best row", "SCOPE", "2", "COLUMN_NAME", "id", "DATA_TYPE", "4", "TYPE_NAME", "int4",
                    "PSEUDO_COLUMN", "1");
        });
        check("getVersionColumns", () -> {
            List<Map<String, String>> r = rows(md.getVersionColumns(null, "public", "items"), "COLUMN_NAME", "TYPE_NAME", "PSEUDO_COLUMN");
            eq(1, r.size(), "rows " + r);
            expectRow(r.get(0), "ctid", "COLUMN_NAME", "ctid", "TYPE_NAME", "tid", "PSEUDO_COLUMN", "2");
        });
        String fkcols[] = {"PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "KEY_SEQ", "FK_NAME", "PK_NAME"};
        check("getImportedKeys", () -> eq(0, rows(md.getImportedKeys(null, "public", "items"), fkcols).size(), "rows"));
        check("getExportedKeys", () -> eq(0, rows(md.getExportedKeys(null, "public", "items"), fkcols).size(), "rows"));
        check("getCrossReference", () ->
                eq(0, rows(md.getCrossReference(null, "public", "items", null, "public", "typed"), fkcols).size(), "rows"));

        // ---------------------------------------------------------------- privileges
        check("getTablePrivileges", () -> {
            List<Map<String, String>> r = rows(md.getTablePrivileges(null, "public", "items"),
                    "TABLE_NAME", "GRANTOR", "GRANTEE", "PRIVILEGE", "IS_GRANTABLE");
            List<String> privs = column(r, "PRIVILEGE");
            ok(privs.containsAll(Arrays.asList("SELECT", "INSERT", "UPDATE", "DELETE")), "privileges " + r);
            for (Map<String, String> row : r) eq("brook", row.get("GRANTEE"), "GRANTEE");
        });
        check("getColumnPrivileges", () -> {
            List<Map<String, String>> r = rows(md.getColumnPrivileges(null, "public", "items", "price"),
                    "COLUMN_NAME", "GRANTEE", "PRIVILEGE");
            ok(column(r, "PRIVILEGE").contains("SELECT"), "privileges " + r);
        });

        // ---------------------------------------------------------------- types, functions, procedures
        check("getTypeInfo", () -> {
            List<Map<String, String>> r = rows(md.getTypeInfo(), "TYPE_NAME", "DATA_TYPE", "PRECISION",
                    "NULLABLE", "CASE_SENSITIVE", "SEARCHABLE", "UNSIGNED_ATTRIBUTE", "AUTO_INCREMENT");
            // PRECISION as pgjdbc 42.5 reports it against PostgreSQL (0 for integers, 6 for timestamps)
            expectRow(only(r, "TYPE_NAME", "int4"), "int4", "DATA_TYPE", "4", "PRECISION", "0", "NULLABLE", "1",
                    "SEARCHABLE", "3");
            expectRow(only(r, "TYPE_NAME", "int8"), "int8", "DATA_TYPE", "-5");
            expectRow(only(r, "TYPE_NAME", "varchar"), "varchar", "DATA_TYPE", "12", "PRECISION", "10485760");
            expectRow(only(r, "TYPE_NAME", "numeric"), "numeric", "DATA_TYPE", "2", "PRECISION", "1000");
            expectRow(only(r, "TYPE_NAME", "uuid"), "uuid", "DATA_TYPE", "1111");
            expectRow(only(r, "TYPE_NAME", "timestamp"), "timestamp", "DATA_TYPE", "93", "PRECISION", "6");
            expectRow(only(r, "TYPE_NAME", "timestamptz"), "timestamptz", "DATA_TYPE", "93");
            expectRow(only(r, "TYPE_NAME", "bool"), "bool", "DATA_TYPE", "-7");
            expectRow(only(r, "TYPE_NAME", "_int4"), "_int4", "DATA_TYPE", "2003");
            expectRow(only(r, "TYPE_NAME", "serial"), "serial", "DATA_TYPE", "4", "AUTO_INCREMENT", "t");
        });
        check("getUDTs(DISTINCT)", () ->
                eq(0, rows(md.getUDTs(null, "public", "%", new int[] {Types.DISTINCT}), "TYPE_NAME").size(), "rows"));
        check("getUDTs(all): relations' row types", () -> {
            // PostgreSQL has a composite type (typtype 'c') per relation; pgjdbc lists them as STRUCT
            List<Map<String, String>> r = rows(md.getUDTs(null, "public", "%", null), "TYPE_SCHEM", "TYPE_NAME", "DATA_TYPE");
            expectRow(only(r, "TYPE_NAME", "items"), "items", "TYPE_SCHEM", "public", "DATA_TYPE", "2002");
        });
        String fcols[] = {"FUNCTION_SCHEM", "FUNCTION_NAME", "REMARKS", "FUNCTION_TYPE", "SPECIFIC_NAME"};
        check("getFunctions(public, add1)", () -> {
            List<Map<String, String>> r = rows(md.getFunctions(null, "public", "add1"), fcols);
            eq(1, r.size(), "rows " + r);
            expectRow(r.get(0), "add1", "FUNCTION_SCHEM", "public", "FUNCTION_NAME", "add1", "FUNCTION_TYPE", "1");
            ok(r.get(0).get("SPECIFIC_NAME").startsWith("add1_"), "SPECIFIC_NAME " + r.get(0).get("SPECIFIC_NAME"));
        });
        check("getFunctions(pg_catalog, abs)", () -> {
            List<Map<String, String>> r = rows(md.getFunctions(null, "pg_catalog", "abs"), fcols);
            ok(r.size() >= 4, "abs overloads " + r);
            for (Map<String, String> row : r) eq("abs", row.get("FUNCTION_NAME"), "FUNCTION_NAME");
        });
        check("getFunctionColumns(add1)", () -> {
            List<Map<String, String>> r = rows(md.getFunctionColumns(null, "public", "add1", null),
                    "FUNCTION_NAME", "COLUMN_NAME", "COLUMN_TYPE", "DATA_TYPE", "TYPE_NAME", "ORDINAL_POSITION");
            eq(2, r.size(), "rows " + r);
            expectRow(r.get(0), "returns", "COLUMN_NAME", "returnValue", "COLUMN_TYPE", "4", "DATA_TYPE", "4", "TYPE_NAME", "int4");
            expectRow(r.get(1), "x", "COLUMN_NAME", "x", "COLUMN_TYPE", "1", "DATA_TYPE", "4", "TYPE_NAME", "int4",
                    "ORDINAL_POSITION", "1");
        });
        check("getProcedures(public, %)", () -> {
            // against PostgreSQL 11+ pgjdbc 42.5 lists only prokind 'p' (procedures), so not add1
            List<Map<String, String>> r = rows(md.getProcedures(null, "public", "%"),
                    "PROCEDURE_SCHEM", "PROCEDURE_NAME", "PROCEDURE_TYPE", "SPECIFIC_NAME");
            eq(0, r.size(), "rows " + r);
        });
        check("getProcedureColumns(add1)", () -> {
            List<Map<String, String>> r = rows(md.getProcedureColumns(null, "public", "add1", null),
                    "PROCEDURE_NAME", "COLUMN_NAME", "COLUMN_TYPE", "DATA_TYPE", "TYPE_NAME");
            eq(2, r.size(), "rows " + r);
            expectRow(r.get(0), "returns", "COLUMN_NAME", "returnValue", "COLUMN_TYPE", "5", "TYPE_NAME", "int4");
            expectRow(r.get(1), "x", "COLUMN_NAME", "x", "COLUMN_TYPE", "1", "TYPE_NAME", "int4");
        });

        // ---------------------------------------------------------------- ResultSetMetaData
        check("ResultSetMetaData(SELECT * FROM items)", () -> {
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT * FROM items")) {
                ResultSetMetaData m = rs.getMetaData();
                eq(6, m.getColumnCount(), "column count");
                String[] types = {"int4", "varchar", "numeric", "uuid", "time", "timestamp"};
                int[] jdbcTypes = {Types.INTEGER, Types.VARCHAR, Types.NUMERIC, Types.OTHER, Types.TIME, Types.TIMESTAMP};
                String[] classes = {"java.lang.Integer", "java.lang.String", "java.math.BigDecimal", "java.util.UUID",
                        "java.sql.Time", "java.sql.Timestamp"};
                int[] precision = {10, 32, 10, Integer.MAX_VALUE, 15, 29};
                int[] scale = {0, 0, 2, 0, 6, 6};
                int[] nullable = {ResultSetMetaData.columnNoNulls, ResultSetMetaData.columnNoNulls,
                        ResultSetMetaData.columnNullable, ResultSetMetaData.columnNullable,
                        ResultSetMetaData.columnNullable, ResultSetMetaData.columnNullable};
                List<String> errs = new ArrayList<>();
                for (int i = 1; i <= 6; i++) {
                    String col = m.getColumnName(i);
                    if (!types[i - 1].equals(m.getColumnTypeName(i))) errs.add(col + " getColumnTypeName " + m.getColumnTypeName(i));
                    if (jdbcTypes[i - 1] != m.getColumnType(i)) errs.add(col + " getColumnType " + m.getColumnType(i));
                    if (!classes[i - 1].equals(m.getColumnClassName(i))) errs.add(col + " getColumnClassName " + m.getColumnClassName(i));
                    if (precision[i - 1] != m.getPrecision(i)) errs.add(col + " getPrecision " + m.getPrecision(i));
                    if (scale[i - 1] != m.getScale(i)) errs.add(col + " getScale " + m.getScale(i));
                    if (nullable[i - 1] != m.isNullable(i)) errs.add(col + " isNullable " + m.isNullable(i));
                    if (!"items".equals(m.getTableName(i))) errs.add(col + " getTableName <" + m.getTableName(i) + ">");
                    if (!"".equals(m.getSchemaName(i))) errs.add(col + " getSchemaName <" + m.getSchemaName(i) + ">");
                    if (!"public".equals(((org.postgresql.PGResultSetMetaData) m).getBaseSchemaName(i)))
                        errs.add(col + " getBaseSchemaName <" + ((org.postgresql.PGResultSetMetaData) m).getBaseSchemaName(i) + ">");
                    if (!col.equals(((org.postgresql.PGResultSetMetaData) m).getBaseColumnName(i)))
                        errs.add(col + " getBaseColumnName <" + ((org.postgresql.PGResultSetMetaData) m).getBaseColumnName(i) + ">");
                    if (m.isAutoIncrement(i)) errs.add(col + " isAutoIncrement true");
                }
                if (m.getColumnDisplaySize(2) != 32) errs.add("name getColumnDisplaySize " + m.getColumnDisplaySize(2));
                ok(errs.isEmpty(), String.join("; ", errs));
            }
        });
        check("ResultSetMetaData(expressions)", () -> {
            try (Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT id + 1 AS next_id, upper(name) AS uname FROM items")) {
                ResultSetMetaData m = rs.getMetaData();
                eq("next_id", m.getColumnLabel(1), "label");
                eq("int4", m.getColumnTypeName(1), "type");
                eq("", m.getTableName(1), "getTableName of an expression");
                eq(ResultSetMetaData.columnNullableUnknown, m.isNullable(1), "isNullable of an expression");
            }
        });

        check("ResultSetMetaData + getObject(interval column)", () -> {
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT dur FROM extra WHERE id = 1")) {
                ResultSetMetaData m = rs.getMetaData();
                eq("interval", m.getColumnTypeName(1), "getColumnTypeName");
                eq(Types.OTHER, m.getColumnType(1), "getColumnType");
                ok(rs.next(), "a row");
                Object o = rs.getObject(1);
                ok(o instanceof org.postgresql.util.PGInterval, "getObject class " + o.getClass().getName());
                org.postgresql.util.PGInterval iv = (org.postgresql.util.PGInterval) o;
                eq(1, iv.getDays(), "days");
                eq(2, iv.getHours(), "hours");
            }
        });
        check("Connection.getSchema", () -> eq("public", c.getSchema(), "current schema"));
        check("Connection.isValid (empty query)", () -> ok(c.isValid(2), "isValid"));

        // ---------------------------------------------------------------- typed parameters
        UUID uuid = UUID.fromString("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
        check("ParameterMetaData(INSERT INTO items)", () -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)")) {
                ParameterMetaData pm = ps.getParameterMetaData();
                eq(6, pm.getParameterCount(), "count");
                List<String> names = new ArrayList<>();
                for (int i = 1; i <= 6; i++) names.add(pm.getParameterTypeName(i));
                eq(Arrays.asList("int4", "varchar", "numeric", "uuid", "time", "timestamp"), names, "parameter types");
            }
        });
        check("PreparedStatement INSERT setObject(UUID)/setBigDecimal/setTimestamp", () -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO items (id, name, price, u, created) VALUES (?, ?, ?, ?, ?)")) {
                ps.setInt(1, 10);
                ps.setString(2, "ten");
                ps.setBigDecimal(3, new BigDecimal("12.34"));
                ps.setObject(4, uuid);
                ps.setTimestamp(5, Timestamp.valueOf("2026-03-04 05:06:07.5"));
                eq(1, ps.executeUpdate(), "update count");
            }
            try (Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT name, price, u, created FROM items WHERE id = 10")) {
                ok(rs.next(), "row 10");
                eq("ten", rs.getString(1), "name");
                eq(new BigDecimal("12.34"), rs.getBigDecimal(2), "price");
                eq(uuid, rs.getObject(3), "uuid as getObject");
                eq(Timestamp.valueOf("2026-03-04 05:06:07.5"), rs.getTimestamp(4), "timestamp");
            }
        });
        check("PreparedStatement INSERT setTime", () -> {
            // pgjdbc sends "13:14:15+00" as an untyped (oid 0) parameter; PostgreSQL's time input drops the zone
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO items (id, t) VALUES (?, ?)")) {
                ps.setInt(1, 11);
                ps.setTime(2, Time.valueOf("13:14:15"));
                eq(1, ps.executeUpdate(), "update count");
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT t FROM items WHERE id = 11")) {
                ok(rs.next(), "row 11");
                eq(Time.valueOf("13:14:15"), rs.getTime(1), "time");
            }
        });
        check("PreparedStatement INSERT setDate", () -> {
            // pgjdbc sends "2026-01-31 +00" as an untyped (oid 0) parameter
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO typed (id, d) VALUES (?, ?)")) {
                ps.setInt(1, 10);
                ps.setDate(2, java.sql.Date.valueOf("2026-01-31"));
                eq(1, ps.executeUpdate(), "update count");
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT d FROM typed WHERE id = 10")) {
                ok(rs.next(), "row 10");
                eq(java.sql.Date.valueOf("2026-01-31"), rs.getDate(1), "date");
            }
        });
        check("PreparedStatement WHERE created = setTimestamp", () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM items WHERE created = ?")) {
                ps.setTimestamp(1, Timestamp.valueOf("2026-01-02 03:04:05"));
                try (ResultSet rs = ps.executeQuery()) {
                    ok(rs.next(), "a row");
                    eq(1, rs.getInt(1), "id");
                }
            }
        });
        UUID uuid1 = UUID.fromString("11111111-2222-3333-4444-555555555555");
        check("PreparedStatement WHERE u = setObject(UUID) (x6: server-prepared, binary)", () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT id, u, price, t, created FROM items WHERE u = ?")) {
                for (int k = 0; k < 6; k++) {
                    ps.setObject(1, uuid1);
                    try (ResultSet rs = ps.executeQuery()) {
                        ok(rs.next(), "row, execution " + (k + 1));
                        eq(1, rs.getInt(1), "id, execution " + (k + 1));
                        eq(uuid1, rs.getObject(2, UUID.class), "uuid, execution " + (k + 1));
                        eq(new BigDecimal("1.50"), rs.getBigDecimal(3), "price, execution " + (k + 1));
                        eq(LocalTime.of(10, 11, 12), rs.getObject(4, LocalTime.class), "time, execution " + (k + 1));
                        eq(LocalDateTime.of(2026, 1, 2, 3, 4, 5), rs.getObject(5, LocalDateTime.class), "timestamp, execution " + (k + 1));
                        ok(!rs.next(), "one row");
                    }
                }
            }
        });
        check("PreparedStatement WHERE price = setBigDecimal", () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM items WHERE price = ?")) {
                ps.setBigDecimal(1, new BigDecimal("2.25"));
                try (ResultSet rs = ps.executeQuery()) {
                    ok(rs.next(), "a row");
                    eq(2, rs.getInt(1), "id");
                    ok(!rs.next(), "one row");
                }
            }
        });
        check("PreparedStatement WHERE id = setLong (int8 parameter, int4 column)", () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT name FROM items WHERE id = ?")) {
                ps.setLong(1, 1L);
                try (ResultSet rs = ps.executeQuery()) {
                    ok(rs.next(), "a row");
                    eq("one", rs.getString(1), "name");
                }
            }
        });
        check("PreparedStatement WHERE u = setObject(String, Types.OTHER)", () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM items WHERE u = ?")) {
                ps.setObject(1, "11111111-2222-3333-4444-555555555555", Types.OTHER);
                try (ResultSet rs = ps.executeQuery()) {
                    ok(rs.next(), "a row");
                    eq(1, rs.getInt(1), "id");
                }
            }
        });
        check("PreparedStatement INSERT setNull(VARCHAR/NUMERIC/OTHER/TIMESTAMP)", () -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO items (id, name, price, u, created) VALUES (?, ?, ?, ?, ?)")) {
                ps.setInt(1, 12);
                ps.setString(2, "twelve");
                ps.setNull(3, Types.NUMERIC);
                ps.setNull(4, Types.OTHER);
                ps.setNull(5, Types.TIMESTAMP);
                eq(1, ps.executeUpdate(), "update count");
            }
            try (Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT price, u, created FROM items WHERE id = 12")) {
                ok(rs.next(), "row 12");
                ok(rs.getObject(1) == null && rs.getObject(2) == null && rs.getObject(3) == null, "nulls");
            }
        });
        check("PreparedStatement WHERE t = setTime", () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM items WHERE t = ?")) {
                ps.setTime(1, Time.valueOf("10:11:12"));
                try (ResultSet rs = ps.executeQuery()) {
                    ok(rs.next(), "a row");
                    eq(1, rs.getInt(1), "id");
                }
            }
        });
        LocalDate ld = LocalDate.of(2026, 2, 28);
        LocalTime lt = LocalTime.of(23, 59, 58, 123456000);
        OffsetDateTime odt = OffsetDateTime.of(2026, 5, 6, 7, 8, 9, 0, ZoneOffset.ofHours(2));
        LocalDateTime ldt = LocalDateTime.of(2026, 7, 8, 9, 10, 11);
        check("PreparedStatement INSERT setObject(LocalDate/LocalTime/OffsetDateTime/LocalDateTime)", () -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO typed (id, d, lt, odt, ldt) VALUES (?, ?, ?, ?, ?)")) {
                ps.setInt(1, 1);
                ps.setObject(2, ld);
                ps.setObject(3, lt);
                ps.setObject(4, odt);
                ps.setObject(5, ldt);
                eq(1, ps.executeUpdate(), "update count");
            }
            try (Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT d, lt, odt, ldt FROM typed WHERE id = 1")) {
                ok(rs.next(), "row 1");
                eq(ld, rs.getObject(1, LocalDate.class), "date");
                eq(lt, rs.getObject(2, LocalTime.class), "time");
                eq(odt.withOffsetSameInstant(ZoneOffset.UTC), rs.getObject(3, OffsetDateTime.class), "timestamptz");
                eq(ldt, rs.getObject(4, LocalDateTime.class), "timestamp");
            }
        });
        check("PreparedStatement WHERE d = setObject(LocalDate), odt = setObject(OffsetDateTime)", () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM typed WHERE d = ? AND odt = ?")) {
                ps.setObject(1, ld);
                ps.setObject(2, odt);
                try (ResultSet rs = ps.executeQuery()) {
                    ok(rs.next(), "a row");
                    eq(1, rs.getInt(1), "id");
                }
            }
        });
        check("PreparedStatement SELECT ?::date / ?::time / ?::timestamptz round trip", () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT ?::date, ?::time, ?::timestamptz")) {
                ps.setObject(1, ld);
                ps.setObject(2, lt);
                ps.setObject(3, odt);
                try (ResultSet rs = ps.executeQuery()) {
                    ok(rs.next(), "a row");
                    eq(ld, rs.getObject(1, LocalDate.class), "date");
                    eq(lt, rs.getObject(2, LocalTime.class), "time");
                    eq(odt.toInstant(), rs.getObject(3, OffsetDateTime.class).toInstant(), "timestamptz instant");
                }
            }
        });
        check("PreparedStatement INSERT setArray(int4[]) and getArray", () -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO typed (id, arr) VALUES (?, ?)")) {
                ps.setInt(1, 2);
                ps.setArray(2, c.createArrayOf("int4", new Integer[] {1, 2, 3}));
                eq(1, ps.executeUpdate(), "update count");
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT arr FROM typed WHERE id = 2")) {
                ok(rs.next(), "row 2");
                Array a = rs.getArray(1);
                ok(a != null, "array not null");
                eq("int4", a.getBaseTypeName(), "base type");
                eq(Arrays.asList(1, 2, 3), Arrays.asList((Integer[]) a.getArray()), "elements");
            }
        });
        check("PreparedStatement setObject(int[]) (primitive array)", () -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO typed (id, arr) VALUES (?, ?)")) {
                ps.setInt(1, 3);
                ps.setObject(2, new int[] {4, 5});
                eq(1, ps.executeUpdate(), "update count");
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT arr FROM typed WHERE id = 3")) {
                ok(rs.next(), "row 3");
                eq(Arrays.asList(4, 5), Arrays.asList((Integer[]) rs.getArray(1).getArray()), "elements");
            }
        });
        check("PreparedStatement WHERE id = ANY(setArray(int4[]))", () -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM items WHERE id = ANY(?) ORDER BY id")) {
                ps.setArray(1, c.createArrayOf("int4", new Integer[] {1, 2, 99}));
                List<Integer> ids = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) ids.add(rs.getInt(1));
                }
                eq(Arrays.asList(1, 2), ids, "ids");
            }
        });

        // ---------------------------------------------------------------- updatable result set
        check("updatable ResultSet updateString + updateRow", () -> {
            try (Statement s = c.createStatement(ResultSet.TYPE_FORWARD_ONLY, ResultSet.CONCUR_UPDATABLE);
                 ResultSet rs = s.executeQuery("SELECT * FROM items")) {
                eq(ResultSet.CONCUR_UPDATABLE, rs.getConcurrency(), "concurrency");
                boolean done = false;
                while (rs.next()) {
                    if (rs.getInt("id") == 2) {
                        rs.updateString("name", "deux");
                        rs.updateBigDecimal("price", new BigDecimal("3.75"));
                        rs.updateRow();
                        eq("deux", rs.getString("name"), "row after updateRow");
                        done = true;
                    }
                }
                ok(done, "row 2 seen");
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT name, price FROM items WHERE id = 2")) {
                ok(rs.next(), "row 2");
                eq("deux", rs.getString(1), "name re-read");
                eq(new BigDecimal("3.75"), rs.getBigDecimal(2), "price re-read");
            }
        });
        check("updatable ResultSet moveToInsertRow + insertRow", () -> {
            try (Statement s = c.createStatement(ResultSet.TYPE_FORWARD_ONLY, ResultSet.CONCUR_UPDATABLE);
                 ResultSet rs = s.executeQuery("SELECT * FROM items")) {
                rs.moveToInsertRow();
                rs.updateInt("id", 20);
                rs.updateString("name", "twenty");
                rs.updateObject("u", UUID.fromString("00000000-0000-0000-0000-000000000020"));
                rs.insertRow();
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT name, u FROM items WHERE id = 20")) {
                ok(rs.next(), "row 20");
                eq("twenty", rs.getString(1), "name");
                eq(UUID.fromString("00000000-0000-0000-0000-000000000020"), rs.getObject(2), "uuid");
            }
        });
        check("updatable ResultSet deleteRow", () -> {
            try (Statement s = c.createStatement()) {
                s.execute("INSERT INTO items (id, name) VALUES (21, 'twenty-one')");
            }
            try (Statement s = c.createStatement(ResultSet.TYPE_SCROLL_INSENSITIVE, ResultSet.CONCUR_UPDATABLE);
                 ResultSet rs = s.executeQuery("SELECT * FROM items WHERE id = 21")) {
                ok(rs.next(), "row 21");
                rs.deleteRow();
            }
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM items WHERE id = 21")) {
                rs.next();
                eq(0L, rs.getLong(1), "rows left");
            }
        });

        c.close();
        System.out.println();
        System.out.println("jdbc metadata: " + passed + " passed, " + failures.size() + " failed, "
                + gaps.size() + " known gaps");
        for (String g : gaps) System.out.println("  KNOWN GAP " + g);
        for (String f : failures) System.out.println("  FAIL " + f);
        System.exit(failures.isEmpty() ? 0 : 1);
    }
}
