package dev.punctual.spring;

import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;

/**
 * A PostgreSQL database of one test class (punctual_spring_&lt;random&gt;), created on
 * open and dropped on close, on the server at {@code PUNCTUAL_TEST_POSTGRES_HOST}
 * (default 127.0.0.1:5432) as the user postgres, trusted: what {@code bash .ci/run
 * services} starts.
 */
final class TestDatabase implements AutoCloseable {
    final String hostPort;
    final String name;

    private TestDatabase() throws SQLException {
        String host = System.getenv("PUNCTUAL_TEST_POSTGRES_HOST");
        hostPort = host == null || host.isEmpty() ? "127.0.0.1:5432" : host;
        byte[] random = new byte[6];
        new SecureRandom().nextBytes(random);
        name = "punctual_spring_" + HexFormat.of().formatHex(random);
        admin("CREATE DATABASE " + name);
    }

    static TestDatabase create() {
        try {
            return new TestDatabase();
        } catch (SQLException e) {
            throw new AssertionError("PostgreSQL does not answer (" + e.getMessage() + "): start it with `bash .ci/run"
                    + " services`, or point PUNCTUAL_TEST_POSTGRES_HOST at one", e);
        }
    }

    /** The JDBC URL for spring.datasource.url. */
    String jdbcUrl() { return "jdbc:postgresql://" + hostPort + "/" + name + "?user=postgres"; }

    /** The URL punctual takes ({@code outbox init --url}, {@code [[outbox]] url}). */
    String url() { return "postgres://postgres@" + hostPort + "/" + name; }

    private void admin(String sql) throws SQLException {
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://" + hostPort + "/postgres?user=postgres");
             Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    @Override
    public void close() throws SQLException {
        admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }
}
