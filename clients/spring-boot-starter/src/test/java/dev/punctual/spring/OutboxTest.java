package dev.punctual.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.punctual.NotFoundException;
import dev.punctual.PunctualClient;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.jdbc.DataSourceBuilder;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.transaction.annotation.Transactional;

/**
 * PunctualTemplate with {@code punctual.outbox.table} on PostgreSQL: a schedule is a row
 * of the outbox written in the order's transaction, which a server with that
 * {@code [[outbox]]} drains; a rolled-back transaction leaves no row; a write outside a
 * transaction is a row committed at once. The table is made by {@code punctual outbox
 * init}, the server and the database are the test's own.
 */
@SpringBootTest(classes = OutboxTest.App.class, properties = "punctual.outbox.table=punctual_outbox")
@DirtiesContext // its database and server end with the context
class OutboxTest {
    static final String QUEUE = "spring.outbox";

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Orders.class)
    static class App {
        @Bean(destroyMethod = "close")
        TestDatabase testDatabase() throws IOException, InterruptedException {
            TestDatabase database = TestDatabase.create();
            Process init = new ProcessBuilder(PunctualServer.binary(), "outbox", "init", "--url", database.url())
                    .redirectErrorStream(true).start();
            String said = new String(init.getInputStream().readAllBytes());
            if (init.waitFor() != 0) throw new IllegalStateException("punctual outbox init failed: " + said);
            return database;
        }

        @Bean(destroyMethod = "close")
        PunctualServer punctualServer(TestDatabase database) {
            return PunctualServer.start("""
                    [[outbox]]
                    url = "%s"
                    poll = "200ms"
                    """.formatted(database.url()));
        }

        /** The application's own client (the starter's backs off): this test's server. */
        @Bean
        PunctualClient punctualClient(PunctualServer server) {
            return PunctualClient.builder().server(server.url()).build();
        }

        @Bean
        DataSource dataSource(TestDatabase database) {
            return DataSourceBuilder.create().url(database.jdbcUrl()).build();
        }
    }

    record OrderCancel(long orderId) {}

    static class Orders {
        private final JdbcTemplate jdbc;
        private final PunctualTemplate punctual;

        Orders(JdbcTemplate jdbc, PunctualTemplate punctual) {
            this.jdbc = jdbc;
            this.punctual = punctual;
        }

        @Transactional
        public void place(long id, boolean refused) {
            jdbc.update("INSERT INTO orders (id) VALUES (?)", id);
            punctual.schedule(QUEUE, "order-" + id, new OrderCancel(id), Duration.ofMinutes(30), spec -> spec.tag("orders"));
            if (refused) throw new IllegalStateException("payment refused");
        }
    }

    @Autowired Orders orders;
    @Autowired PunctualTemplate punctual;
    @Autowired JdbcTemplate jdbc;
    @Autowired MeterRegistry meters;

    @BeforeEach
    void table() {
        jdbc.execute("CREATE TABLE IF NOT EXISTS orders (id bigint PRIMARY KEY)");
    }

    @Test
    void aCommittedScheduleIsARowTheServerApplies() {
        orders.place(1, false);

        waitUntil("order-1 drained from the outbox", () -> exists("order-1"));
        assertThat(punctual.client().get(QUEUE, "order-1").payload(OrderCancel.class).orderId()).isEqualTo(1);
        assertThat(counted("schedule")).isGreaterThanOrEqualTo(1);
    }

    @Test
    void aRolledBackScheduleLeavesNoRow() {
        assertThatThrownBy(() -> orders.place(2, true)).hasMessage("payment refused");

        assertThat(jdbc.queryForObject("SELECT count(*) FROM orders WHERE id = 2", Long.class)).isZero();
        assertThat(rows("order-2")).isZero();
        // A later commit drained shows the drain has passed where order-2's row would be.
        orders.place(4, false);
        waitUntil("order-4 drained", () -> exists("order-4"));
        assertThat(exists("order-2")).isFalse();
    }

    @Test
    void aWriteOutsideATransactionIsARowCommittedAtOnce() {
        orders.place(3, false);
        waitUntil("order-3 drained", () -> exists("order-3"));

        punctual.cancel(QUEUE, "order-3");
        waitUntil("the cancel of order-3 drained", () -> !exists("order-3"));
        assertThat(counted("cancel")).isGreaterThanOrEqualTo(1);
    }

    private boolean exists(String key) {
        try {
            punctual.client().get(QUEUE, key);
            return true;
        } catch (NotFoundException e) {
            return false;
        }
    }

    private long rows(String key) {
        List<Long> counts = jdbc.queryForList("SELECT count(*) FROM punctual_outbox WHERE key = ?", Long.class, key);
        return counts.get(0);
    }

    private static void waitUntil(String what, java.util.function.BooleanSupplier condition) {
        PunctualServer.waitUntil(Duration.ofSeconds(15), what, condition);
    }

    private double counted(String op) {
        Counter counter = meters.find("punctual.template.requests").tags("queue", QUEUE, "op", op, "route", "outbox").counter();
        return counter == null ? 0 : counter.count();
    }
}
