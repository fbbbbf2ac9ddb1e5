package dev.punctual;

import java.sql.SQLException;

/** {@link Outbox} in PostgreSQL (PUNCTUAL_TEST_POSTGRES_URL), through its JDBC driver. */
class OutboxPostgresTest extends OutboxContract {
    @Override
    TestDatabase open() throws SQLException { return TestDatabase.postgres(); }
}
