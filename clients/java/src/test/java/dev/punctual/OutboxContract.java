package dev.punctual;

import static org.junit.jupiter.api.Assertions.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The outbox's rows in a real database, the same for each dialect
 * ({@link OutboxPostgresTest}, {@link OutboxMariaDbTest}): what a committed transaction
 * leaves, what a rolled-back one does not, the cancels, another table, and the refusals
 * that write nothing. Each class runs in a database of its own ({@link TestDatabase}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class OutboxContract {
    static final String CUSTOM_TABLE = "app_outbox";

    /** Most fields of a schedule; {@link #RICH_BODY} is its body as the API reads it. */
    static final TaskSpec RICH = TaskSpec.create()
            .delay(Duration.ofMinutes(30))
            .payload(Map.of("order_id", 1234, "lines", List.of("a", "b")))
            .repeatCron("0 0 9 ? * MON-FRI", "Europe/Paris", CronSyntax.SPRING)
            .tag("order-1234", "orders")
            .maxAttempts(5)
            .backoff(Duration.ofSeconds(1), 2.5, Duration.ofMinutes(1))
            .ifExists(TaskSpec.IfExists.REPLACE)
            .target(new Target("https://shop.example/hooks/cancel", "POST", Map.of("X-Shop", "7"), Duration.ofSeconds(10),
                    Json.MAPPER.createObjectNode().put("order", 1234)))
            .priority(7)
            .debounce(Duration.ofMinutes(5))
            .group("merchant-42")
            .uniqueFor(Duration.ofHours(1), true)
            .calendar("office")
            .misfire(Misfire.SKIP)
            .misfireAfter(Duration.ofMinutes(2))
            .overlap(Overlap.QUEUE)
            .jitter(Duration.ofSeconds(5));

    static final String RICH_BODY = """
            {
              "delay": 1800000,
              "payload": {"order_id": 1234, "lines": ["a", "b"]},
              "repeat": {"cron": "0 0 9 ? * MON-FRI", "tz": "Europe/Paris", "cron_syntax": "spring"},
              "tags": ["order-1234", "orders"],
              "max_attempts": 5,
              "backoff": {"initial": 1000, "factor": 2.5, "max": 60000},
              "if_exists": "replace",
              "target": {"url": "https://shop.example/hooks/cancel", "method": "POST", "headers": {"X-Shop": "7"},
                         "timeout": 10000, "body": {"order": 1234}},
              "priority": 7,
              "debounce": {"max_wait": 300000},
              "group": "merchant-42",
              "unique_for": {"window": 3600000, "dead": true},
              "calendar": "office",
              "misfire": "skip",
              "misfire_after": 120000,
              "overlap": "queue",
              "jitter": 5000
            }""";

    /** One outbox row; body is null for NULL. */
    record Row(long id, String queue, String key, String op, String body) {}

    TestDatabase database;
    final Outbox outbox = Outbox.create();

    abstract TestDatabase open() throws SQLException;

    @BeforeAll
    void createDatabase() throws Exception {
        database = open();
        database.createTables(Outbox.DEFAULT_TABLE);
        database.createTables(CUSTOM_TABLE);
    }

    @AfterAll
    void dropDatabase() throws SQLException {
        if (database != null) database.close();
    }

    @BeforeEach
    void emptyTables() throws SQLException {
        try (Connection c = database.connect(); Statement s = c.createStatement()) {
            s.execute("DELETE FROM " + Outbox.DEFAULT_TABLE);
            s.execute("DELETE FROM " + CUSTOM_TABLE);
        }
    }

    List<Row> rows(String table) throws SQLException {
        String sql = database.postgres
                ? "SELECT id, queue, key, op, body::text FROM " + table + " ORDER BY id"
                : "SELECT id, queue, `key`, op, body FROM " + table + " ORDER BY id";
        List<Row> rows = new ArrayList<>();
        try (Connection c = database.connect(); Statement s = c.createStatement(); ResultSet r = s.executeQuery(sql)) {
            while (r.next()) rows.add(new Row(r.getLong(1), r.getString(2), r.getString(3), r.getString(4), r.getString(5)));
        }
        return rows;
    }

    void assertNoRow() throws SQLException {
        assertEquals(List.of(), rows(Outbox.DEFAULT_TABLE));
        assertEquals(List.of(), rows(CUSTOM_TABLE));
    }

    interface Writes {
        void into(Connection connection) throws SQLException;
    }

    /** Runs {@code writes} in a transaction and commits it, or rolls it back. */
    void inTransaction(boolean commit, Writes writes) throws SQLException {
        try (Connection c = database.connect()) {
            c.setAutoCommit(false);
            writes.into(c);
            if (commit) c.commit();
            else c.rollback();
        }
    }

    /** The same JSON value, numbers compared by value (2.5 and 2.50, 1 and 1.0 alike). */
    static void assertSameJson(String expected, String actual) throws IOException {
        JsonNode want = Json.MAPPER.readTree(expected);
        JsonNode got = Json.MAPPER.readTree(actual);
        Comparator<JsonNode> numbersByValue = (a, b) -> a.isNumber() && b.isNumber()
                ? new BigDecimal(a.asText()).compareTo(new BigDecimal(b.asText()))
                : a.equals(b) ? 0 : 1;
        assertTrue(want.equals(numbersByValue, got), "want " + want + ", got " + got);
    }

    /** The body {@link PunctualClient#schedule} sends for {@code spec}, caught by a test server. */
    static String sentBody(TaskSpec spec) throws IOException, InterruptedException {
        BlockingQueue<String> requests = new ArrayBlockingQueue<>(1);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            requests.add(exchange.getRequestMethod() + " " + exchange.getRequestURI().getRawPath() + " " + body);
            byte[] answer = "{\"outcome\": \"created\", \"task\": null}".getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, answer.length);
            exchange.getResponseBody().write(answer);
            exchange.close();
        });
        server.start();
        try {
            PunctualClient client = PunctualClient.builder()
                    .server("http://127.0.0.1:" + server.getAddress().getPort()).retries(0).build();
            client.schedule("order.cancel", "order-1234", spec);
            String request = requests.poll(10, TimeUnit.SECONDS);
            String prefix = "PUT /v1/queues/order.cancel/tasks/order-1234 ";
            assertNotNull(request, "the client sent nothing");
            assertTrue(request.startsWith(prefix), request);
            return request.substring(prefix.length());
        } finally {
            server.stop(0);
        }
    }

    @Test
    void committedScheduleLeavesItsRowWithTheClientsBody() throws Exception {
        long[] id = new long[1];
        inTransaction(true, c -> id[0] = outbox.schedule(c, "order.cancel", "order-1234", RICH));
        List<Row> rows = rows(Outbox.DEFAULT_TABLE);
        assertEquals(1, rows.size(), rows.toString());
        Row row = rows.get(0);
        assertEquals(List.of(id[0], "order.cancel", "order-1234", "schedule"), List.of(row.id(), row.queue(), row.key(), row.op()));
        assertNotNull(row.body());
        assertSameJson(sentBody(RICH), row.body());
        assertSameJson(RICH.toJson().toString(), row.body());
        assertSameJson(RICH_BODY, row.body());
    }

    @Test
    void rolledBackScheduleLeavesNoRow() throws Exception {
        inTransaction(false, c -> outbox.schedule(c, "order.cancel", "order-1234", TaskSpec.create().delay(Duration.ofMinutes(30))));
        assertNoRow();
    }

    @Test
    void cancelAndCancelTagRows() throws Exception {
        long[] ids = new long[2];
        inTransaction(true, c -> {
            ids[0] = outbox.cancel(c, "order.cancel", "order-1234");
            ids[1] = outbox.cancelTag(c, "order.cancel", "cart-9");
        });
        assertEquals(List.of(new Row(ids[0], "order.cancel", "order-1234", "cancel", null),
                new Row(ids[1], "order.cancel", "cart-9", "cancel_tag", null)), rows(Outbox.DEFAULT_TABLE));
        assertTrue(ids[1] > ids[0], Arrays.toString(ids));
    }

    @Test
    void anotherTableByNameAndWithItsSchema() throws Exception {
        String schema;
        try (Connection c = database.connect(); Statement s = c.createStatement();
                ResultSet r = s.executeQuery(database.postgres ? "SELECT current_schema()" : "SELECT DATABASE()")) {
            assertTrue(r.next());
            schema = r.getString(1);
        }
        Outbox custom = Outbox.create(CUSTOM_TABLE);
        Outbox qualified = Outbox.create(schema + "." + CUSTOM_TABLE);
        assertEquals(CUSTOM_TABLE, custom.table());
        inTransaction(true, c -> {
            custom.schedule(c, "order.cancel", "order-1234", TaskSpec.create().dueAt(Instant.parse("2026-10-03T10:00:00Z")));
            qualified.cancel(c, "order.cancel", "order-1234");
        });
        List<Row> rows = rows(CUSTOM_TABLE);
        assertEquals(List.of("schedule", "cancel"), rows.stream().map(Row::op).toList());
        assertSameJson("{\"due_at\": \"2026-10-03T10:00:00Z\"}", rows.get(0).body());
        assertEquals(List.of(), rows(Outbox.DEFAULT_TABLE));
    }

    @Test
    void refusedCallsWriteNothing() throws Exception {
        for (String bad : List.of(CUSTOM_TABLE + "; DELETE FROM orders", "2outbox", "a.b.c", "`outbox`", "\"outbox\"",
                "out-box", "", "a".repeat(49))) {
            assertThrows(IllegalArgumentException.class, () -> Outbox.create(bad), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> Outbox.create(null));
        inTransaction(true, c -> {
            IllegalArgumentException emptyKey = assertThrows(IllegalArgumentException.class,
                    () -> outbox.schedule(c, "order.cancel", "", TaskSpec.create().delay(Duration.ofMinutes(1))));
            assertEquals("empty key", emptyKey.getMessage());
            assertThrows(IllegalArgumentException.class, () -> outbox.schedule(c, "", "order-1234", TaskSpec.create()));
            assertThrows(IllegalArgumentException.class,
                    () -> outbox.schedule(c, "order.cancel", "order-1234", TaskSpec.create().payload(new Object())),
                    "a payload Jackson cannot serialize");
            assertThrows(IllegalArgumentException.class, () -> outbox.cancel(c, "order.cancel", null));
            assertThrows(IllegalArgumentException.class, () -> outbox.cancelTag(c, "order.cancel", ""));
        });
        assertNoRow();
    }
}
