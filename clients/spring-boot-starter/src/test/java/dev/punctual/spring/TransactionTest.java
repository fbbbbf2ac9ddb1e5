package dev.punctual.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.punctual.NotFoundException;
import dev.punctual.PunctualClient;
import dev.punctual.TaskState;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
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
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * PunctualTemplate inside {@code @Transactional} methods on PostgreSQL, without an
 * outbox: nothing reaches the server before the commit, everything after it in the
 * order it was written, nothing on a rollback; an inner {@code REQUIRES_NEW}
 * transaction sends its own writes on its own commit.
 */
@SpringBootTest(classes = TransactionTest.App.class)
@DirtiesContext // its database is dropped with the context
class TransactionTest {
    static final String QUEUE = "spring.tx";

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Orders.class)
    static class App {
        @Bean(destroyMethod = "close")
        TestDatabase testDatabase() { return TestDatabase.create(); }

        @Bean
        DataSource dataSource(TestDatabase database) {
            return DataSourceBuilder.create().url(database.jdbcUrl()).build();
        }
    }

    record OrderCancel(long orderId) {}

    /** The application's service: an order and its timeout in one transaction (a proxy: read it through methods). */
    static class Orders {
        private final JdbcTemplate jdbc;
        private final PunctualTemplate punctual;
        private final TransactionTemplate requiresNew;
        private volatile boolean sentBeforeCommit;

        Orders(JdbcTemplate jdbc, PunctualTemplate punctual, PlatformTransactionManager transactions) {
            this.jdbc = jdbc;
            this.punctual = punctual;
            this.requiresNew = new TransactionTemplate(transactions);
            requiresNew.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
        }

        @Transactional
        public void place(long id, boolean refused) {
            jdbc.update("INSERT INTO orders (id) VALUES (?)", id);
            punctual.schedule(QUEUE, "order-" + id, new OrderCancel(id), Duration.ofMinutes(30));
            sentBeforeCommit = exists("order-" + id);
            if (refused) throw new IllegalStateException("payment refused");
        }

        @Transactional
        public void placeAndPay(long id) {
            jdbc.update("INSERT INTO orders (id) VALUES (?)", id);
            punctual.schedule(QUEUE, "order-" + id, new OrderCancel(id), Duration.ofMinutes(30));
            punctual.cancel(QUEUE, "order-" + id); // paid at once: the cancel goes after the schedule
        }

        /** Schedules {@code outer}, and {@code inner} in a transaction of its own that commits; then fails. */
        @Transactional
        public void auditThenFail(long outer, long inner) {
            punctual.schedule(QUEUE, "order-" + outer, new OrderCancel(outer), Duration.ofMinutes(30));
            requiresNew.executeWithoutResult(status ->
                    punctual.schedule(QUEUE, "order-" + inner, new OrderCancel(inner), Duration.ofMinutes(30)));
            throw new IllegalStateException("the outer transaction fails");
        }

        public boolean sentBeforeCommit() { return sentBeforeCommit; }

        private boolean exists(String key) {
            try {
                punctual.client().get(QUEUE, key);
                return true;
            } catch (NotFoundException e) {
                return false;
            }
        }
    }

    @DynamicPropertySource
    static void server(DynamicPropertyRegistry registry) {
        registry.add("punctual.server", () -> PunctualServer.shared().url());
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
    void aCommitSendsTheScheduleAfterIt() {
        orders.place(1, false);

        assertThat(orders.sentBeforeCommit()).as("sent before the commit").isFalse();
        assertThat(client().get(QUEUE, "order-1").payload(OrderCancel.class).orderId()).isEqualTo(1);
    }

    @Test
    void aRollbackDropsTheSchedule() {
        double droppedBefore = counted("dropped");
        assertThatThrownBy(() -> orders.place(2, true)).hasMessage("payment refused");

        assertThat(jdbc.queryForObject("SELECT count(*) FROM orders WHERE id = 2", Long.class)).isZero();
        assertThrows(NotFoundException.class, () -> client().get(QUEUE, "order-2"));
        assertThat(counted("dropped")).isEqualTo(droppedBefore + 1);
    }

    @Test
    void theWritesOfATransactionAreSentInTheirOrder() {
        orders.placeAndPay(3);

        assertThrows(NotFoundException.class, () -> client().get(QUEUE, "order-3"));
    }

    @Test
    void anInnerTransactionSendsOnItsOwnCommit() {
        assertThatThrownBy(() -> orders.auditThenFail(4, 5)).hasMessage("the outer transaction fails");

        assertThrows(NotFoundException.class, () -> client().get(QUEUE, "order-4"));
        assertThat(client().get(QUEUE, "order-5").state()).isEqualTo(TaskState.SCHEDULED);
    }

    private PunctualClient client() { return punctual.client(); }

    private double counted(String route) {
        Counter counter = meters.find("punctual.template.requests").tags("queue", QUEUE, "route", route).counter();
        return counter == null ? 0 : counter.count();
    }
}
