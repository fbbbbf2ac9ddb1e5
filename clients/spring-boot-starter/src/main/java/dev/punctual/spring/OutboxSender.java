package dev.punctual.spring;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.support.SQLErrorCodeSQLExceptionTranslator;
import org.springframework.jdbc.support.SQLExceptionTranslator;

/**
 * Writes each write as a row of the outbox table (docs/outbox.md) through the
 * application's DataSource: inside a transaction on the transaction's own connection
 * ({@link DataSourceUtils}), so the row commits or rolls back with the application's
 * rows; outside one on a connection of its own, committed at once. The server that
 * drains the table applies the rows of one key in the order they were written, so every
 * write goes this way once the outbox is set, never some by HTTP.
 */
final class OutboxSender implements TaskSender {
    private final DataSource dataSource;
    private final String table;
    private final PunctualMetrics metrics;
    private final SQLExceptionTranslator translator;

    OutboxSender(DataSource dataSource, String table, PunctualMetrics metrics) {
        this.dataSource = dataSource;
        this.table = table;
        this.metrics = metrics;
        this.translator = new SQLErrorCodeSQLExceptionTranslator(dataSource);
    }

    @Override
    public void send(TaskRequest request) {
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            PunctualClientAdapter.write(connection, table, request);
        } catch (SQLException e) {
            DataAccessException translated = translator.translate("punctual outbox " + request.op().tag + " of "
                    + request.queue() + "/" + request.key() + " into " + table, null, e);
            throw translated != null ? translated : new IllegalStateException("writing into the outbox table " + table + " failed", e);
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
        metrics.sent(request.queue(), request.op().tag, "outbox");
    }
}
