package dev.punctual;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Writes schedules and cancels as rows of punctual's outbox table in the application's
 * own database (PostgreSQL, or MySQL and MariaDB), through the caller's own JDBC
 * {@link Connection}: inside the caller's transaction, a rolled-back transaction leaves
 * no row, so no task; punctual's server applies each committed row (docs/outbox.md).
 *
 * <pre>{@code
 * connection.setAutoCommit(false);
 * try (PreparedStatement order = connection.prepareStatement("INSERT INTO orders (id, total) VALUES (?, ?)")) {
 *     order.setLong(1, 1234);
 *     order.setBigDecimal(2, new BigDecimal("99.00"));
 *     order.executeUpdate();
 * }
 * Outbox.create().schedule(connection, "order.cancel", "order-1234",
 *         TaskSpec.create().delay(Duration.ofMinutes(30)).payload(Map.of("order_id", 1234)));
 * connection.commit();
 * }</pre>
 *
 * <p>Each call runs one {@code INSERT} and nothing else: it never commits, rolls back,
 * changes auto-commit or opens a connection. The dialect comes from the connection
 * ({@link java.sql.DatabaseMetaData#getDatabaseProductName()}: PostgreSQL, MySQL or
 * MariaDB). Immutable and thread-safe; the connection is the caller's to guard.
 */
public final class Outbox {
    /** The table's name unless {@link #create(String)} says otherwise. */
    public static final String DEFAULT_TABLE = "punctual_outbox";

    /** One identifier, or a schema and an identifier: the same rule as {@code punctual outbox init --table}. */
    private static final Pattern TABLE_NAME =
            Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}(\\.[A-Za-z_][A-Za-z0-9_]{0,47})?");

    private enum Dialect { POSTGRES, MYSQL }

    private final String table;

    private Outbox(String table) { this.table = table; }

    /** The outbox in the table {@value #DEFAULT_TABLE}. */
    public static Outbox create() { return new Outbox(DEFAULT_TABLE); }

    /**
     * The outbox in {@code table}: letters, digits and {@code _} (not first a digit), at
     * most 48 each, optionally {@code schema.table}, since the name is written into the
     * SQL as it is. Any other name is an {@link IllegalArgumentException}.
     */
    public static Outbox create(String table) {
        if (table == null || !TABLE_NAME.matcher(table).matches()) {
            throw new IllegalArgumentException("'" + table + "' is not a table name the outbox takes: letters, digits"
                    + " and _ (not first a digit), at most 48 each, optionally schema.table");
        }
        return new Outbox(table);
    }

    /** The table's name. */
    public String table() { return table; }

    /**
     * Inserts the row {@code (queue, key, 'schedule', body)}, {@code body} being exactly the
     * JSON that {@link PunctualClient#schedule} sends for the same spec. Refused before
     * anything is written: an empty queue or key, or a payload Jackson cannot serialize
     * ({@link IllegalArgumentException}).
     *
     * @return the new row's id
     */
    public long schedule(Connection connection, String queue, String key, TaskSpec spec) throws SQLException {
        requireNonEmpty(queue, "queue");
        requireNonEmpty(key, "key");
        Objects.requireNonNull(spec, "spec");
        return insert(connection, queue, key, "schedule", spec.toJson().toString());
    }

    /**
     * Inserts the row {@code (queue, key, 'cancel', NULL)}, applied as
     * {@link PunctualClient#cancel}.
     *
     * @return the new row's id
     */
    public long cancel(Connection connection, String queue, String key) throws SQLException {
        requireNonEmpty(queue, "queue");
        requireNonEmpty(key, "key");
        return insert(connection, queue, key, "cancel", null);
    }

    /**
     * Inserts the row {@code (queue, tag, 'cancel_tag', NULL)}, applied as
     * {@link PunctualClient#cancelByTag}.
     *
     * @return the new row's id
     */
    public long cancelTag(Connection connection, String queue, String tag) throws SQLException {
        requireNonEmpty(queue, "queue");
        requireNonEmpty(tag, "tag");
        return insert(connection, queue, tag, "cancel_tag", null);
    }

    private long insert(Connection connection, String queue, String key, String op, String body) throws SQLException {
        String sql = switch (dialect(connection)) {
            case POSTGRES -> "INSERT INTO " + table + " (queue, key, op, body) VALUES (?, ?, ?, CAST(? AS jsonb))";
            case MYSQL -> "INSERT INTO " + table + " (queue, `key`, op, body) VALUES (?, ?, ?, ?)";
        };
        try (PreparedStatement insert = connection.prepareStatement(sql, new String[] {"id"})) {
            insert.setString(1, queue);
            insert.setString(2, key);
            insert.setString(3, op);
            if (body == null) insert.setNull(4, Types.VARCHAR);
            else insert.setString(4, body);
            insert.executeUpdate();
            try (ResultSet id = insert.getGeneratedKeys()) {
                if (!id.next()) throw new SQLException("the database gave no id for the new row of " + table);
                return id.getLong(1);
            }
        }
    }

    private static Dialect dialect(Connection connection) throws SQLException {
        String product = connection.getMetaData().getDatabaseProductName();
        String name = product == null ? "" : product.toLowerCase(Locale.ROOT);
        if (name.contains("postgres")) return Dialect.POSTGRES;
        if (name.contains("mysql") || name.contains("mariadb")) return Dialect.MYSQL;
        throw new SQLException("the outbox lives in PostgreSQL, MySQL or MariaDB, not in " + product);
    }

    private static void requireNonEmpty(String value, String field) {
        if (value == null || value.isEmpty()) throw new IllegalArgumentException("empty " + field);
    }
}
