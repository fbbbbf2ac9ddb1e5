package dev.punctual;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Properties;

/**
 * A database of one test run (punctual_java_&lt;random&gt;) in PostgreSQL or MariaDB,
 * created on open, holding the outbox tables made by the repository's DDL
 * (crates/punctual-outbox/sql), and dropped on close.
 *
 * <pre>
 * PUNCTUAL_TEST_POSTGRES_URL  default postgres://postgres@127.0.0.1:5432/postgres
 * PUNCTUAL_TEST_MYSQL_URL     default mysql://punctual:punctual@127.0.0.1:3306/
 * </pre>
 */
final class TestDatabase implements AutoCloseable {
    private static final Path DDL = Path.of("../../crates/punctual-outbox/sql");

    final boolean postgres;
    final String name;
    private final String jdbcBase; // jdbc:…://host:port/
    private final Properties credentials = new Properties();
    private final Connection admin;

    private TestDatabase(boolean postgres, String variable, String fallback) throws SQLException {
        this.postgres = postgres;
        String raw = System.getenv(variable) == null || System.getenv(variable).isEmpty() ? fallback : System.getenv(variable);
        URI url;
        try {
            url = new URI(raw);
        } catch (URISyntaxException e) {
            throw new AssertionError(variable + " is not a URL such as scheme://user:password@host:port/database", e);
        }
        if (url.getHost() == null) {
            throw new AssertionError(variable + " is not a URL such as scheme://user:password@host:port/database");
        }
        String userInfo = url.getUserInfo() == null ? "" : url.getUserInfo();
        int colon = userInfo.indexOf(':');
        credentials.setProperty("user", colon < 0 ? userInfo : userInfo.substring(0, colon));
        if (colon >= 0) credentials.setProperty("password", userInfo.substring(colon + 1));
        String what = postgres ? "PostgreSQL" : "MariaDB";
        jdbcBase = (postgres ? "jdbc:postgresql://" : "jdbc:mariadb://") + url.getHost()
                + (url.getPort() < 0 ? "" : ":" + url.getPort()) + "/";
        try {
            DriverManager.getDriver(jdbcBase);
        } catch (SQLException e) {
            throw new AssertionError("no " + what + " JDBC driver on the class path: run clients/java/run-tests, which"
                    + " fetches the drivers and turns on the pom's jdbc-drivers profile", e);
        }
        String adminDatabase = url.getPath() == null ? "" : url.getPath().replaceFirst("^/", "");
        try {
            admin = DriverManager.getConnection(jdbcBase + adminDatabase, credentials);
        } catch (SQLException e) {
            String shown = url.getScheme() + "://" + credentials.getProperty("user") + "@" + url.getHost()
                    + (url.getPort() < 0 ? "" : ":" + url.getPort()) + "/" + adminDatabase;
            throw new AssertionError(what + " at " + shown + " does not answer (" + e.getMessage() + "): start it with"
                    + " `bash .ci/run services`, or point " + variable + " at one", e);
        }
        byte[] random = new byte[6];
        new SecureRandom().nextBytes(random);
        name = "punctual_java_" + HexFormat.of().formatHex(random);
        try (Statement create = admin.createStatement()) {
            create.execute("CREATE DATABASE " + name);
        }
    }

    static TestDatabase postgres() throws SQLException {
        return new TestDatabase(true, "PUNCTUAL_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres");
    }

    static TestDatabase mariaDb() throws SQLException {
        return new TestDatabase(false, "PUNCTUAL_TEST_MYSQL_URL", "mysql://punctual:punctual@127.0.0.1:3306/");
    }

    /** A new connection to this run's database. */
    Connection connect() throws SQLException { return DriverManager.getConnection(jdbcBase + name, credentials); }

    /**
     * Runs the repository's DDL for {@code table}, every {@code punctual_outbox} in it
     * renamed, as {@code punctual outbox init --table} does.
     */
    void createTables(String table) throws SQLException, IOException {
        String ddl = Files.readString(DDL.resolve(postgres ? "postgres.sql" : "mysql.sql"))
                .replace(Outbox.DEFAULT_TABLE, table);
        try (Connection c = connect(); Statement s = c.createStatement()) {
            for (String statement : statements(ddl)) s.execute(statement);
        }
    }

    /**
     * The statements of a script: split on the semicolons that end them, not those in
     * -- comments (dropped), in quoted strings, or in a $$…$$ function body.
     */
    static List<String> statements(String script) {
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        boolean inString = false;
        boolean inDollarBody = false;
        for (int i = 0; i < script.length(); i++) {
            char c = script.charAt(i);
            if (inString) {
                inString = c != '\'';
            } else if (script.startsWith("$$", i)) {
                inDollarBody = !inDollarBody;
                current.append("$$");
                i++;
                continue;
            } else if (inDollarBody) {
                // the function's body, as it is
            } else if (script.startsWith("--", i)) {
                while (i < script.length() && script.charAt(i) != '\n') i++;
                c = '\n';
            } else if (c == '\'') {
                inString = true;
            } else if (c == ';') {
                if (!current.toString().isBlank()) statements.add(current.toString().strip());
                current.setLength(0);
                continue;
            }
            current.append(c);
        }
        if (!current.toString().isBlank()) statements.add(current.toString().strip());
        return statements;
    }

    @Override
    public void close() throws SQLException {
        try (admin; Statement drop = admin.createStatement()) {
            drop.execute("DROP DATABASE IF EXISTS " + name + (postgres ? " WITH (FORCE)" : ""));
        }
    }
}
