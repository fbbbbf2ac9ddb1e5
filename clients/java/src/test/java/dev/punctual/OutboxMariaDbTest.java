package dev.punctual;

import java.sql.SQLException;

/** {@link Outbox} in MariaDB (PUNCTUAL_TEST_MYSQL_URL), through MariaDB Connector/J. */
class OutboxMariaDbTest extends OutboxContract {
    @Override
    TestDatabase open() throws SQLException { return TestDatabase.mariaDb(); }
}
