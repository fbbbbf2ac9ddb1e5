package dev.punctual.spring;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.punctual.Delivery;
import dev.punctual.NotFoundException;
import dev.punctual.Outbox;
import dev.punctual.Outcome;
import dev.punctual.PunctualClient;
import dev.punctual.PunctualWorker;
import dev.punctual.TaskSpec;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Locale;

/**
 * The one place the starter speaks the Java client's API (dev.punctual): building the
 * client, sending a {@link TaskRequest} over HTTP or as an outbox row, running a worker,
 * reading a {@link Delivery}'s payload and an {@link Outcome}'s kind. When the client's
 * API changes, this class changes and the rest of the starter does not.
 */
final class PunctualClientAdapter {
    private final PunctualClient client;
    private final HttpClient readiness = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    PunctualClientAdapter(PunctualClient client) { this.client = client; }

    static PunctualClient client(PunctualProperties properties) {
        return PunctualClient.builder()
                .server(properties.getServer())
                .token(properties.getToken())
                .timeout(properties.getTimeout())
                .build();
    }

    PunctualClient client() { return client; }

    /**
     * Sends the request now. A cancel of a key that has no task is no error: afterwards
     * there is no such task either way, as when the outbox applies it.
     */
    void send(TaskRequest request) {
        switch (request.op()) {
            case SCHEDULE, RESCHEDULE -> client.schedule(request.queue(), request.key(), spec(request));
            case CANCEL -> {
                try {
                    client.cancel(request.queue(), request.key());
                } catch (NotFoundException gone) {
                    // nothing to cancel
                }
            }
            case CANCEL_TAG -> client.cancelByTag(request.queue(), request.key());
        }
    }

    /** Writes the request as a row of the outbox {@code table} through {@code connection}, in its transaction. */
    static void write(Connection connection, String table, TaskRequest request) throws SQLException {
        Outbox outbox = Outbox.create(table);
        switch (request.op()) {
            case SCHEDULE, RESCHEDULE -> outbox.schedule(connection, request.queue(), request.key(), spec(request));
            case CANCEL -> outbox.cancel(connection, request.queue(), request.key());
            case CANCEL_TAG -> outbox.cancelTag(connection, request.queue(), request.key());
        }
    }

    /** The client's spec of a schedule: the options first, then what the template's call fixed. */
    private static TaskSpec spec(TaskRequest request) {
        TaskSpec spec = TaskSpec.create();
        if (request.options() != null) request.options().accept(spec);
        if (request.payload() != null) spec.payload(request.payload());
        if (request.delay() != null) spec.delay(request.delay());
        if (request.at() != null) spec.dueAt(request.at());
        if (request.op() == TaskRequest.Op.RESCHEDULE) spec.ifExists(TaskSpec.IfExists.REPLACE);
        return spec;
    }

    /** Handles one delivery of a queue: answers the outcome, null for done. */
    @FunctionalInterface
    interface DeliveryHandler {
        Outcome handle(Delivery delivery) throws Exception;
    }

    /** A worker leasing one queue, started; {@link #stop} within a grace period. */
    interface RunningWorker {
        void stop(Duration grace) throws InterruptedException;
    }

    RunningWorker startWorker(String queue, QueueSettings settings, DeliveryHandler handler) {
        PunctualWorker worker = PunctualWorker.builder()
                .client(client)
                .leaseFor(settings.lease())
                .pollWait(settings.pollWait())
                .handle(queue, handler::handle, settings.concurrency())
                .build()
                .start();
        return worker::stop;
    }

    /** The delivery's payload as {@code type}, read by the application's Jackson mapper. */
    static Object payload(Delivery delivery, ObjectMapper mapper, JavaType type) throws IOException {
        return mapper.treeToValue(delivery.payloadJson(), type);
    }

    /** The delivery in a log line: queue/key (attempt n). */
    static String describe(Delivery delivery) {
        return delivery.queue() + "/" + delivery.key() + " (attempt " + delivery.attempt() + ")";
    }

    /** done, retry, reschedule or fail: the outcome's name in metrics; null is done. */
    static String kind(Outcome outcome) {
        return outcome == null ? "done" : outcome.kind().name().toLowerCase(Locale.ROOT);
    }

    /** The server's answer to {@code GET /readyz}: its status and body. */
    record Readiness(int status, String body) {}

    Readiness readiness() throws IOException, InterruptedException {
        String server = client.server();
        HttpResponse<String> answer = readiness.send(
                HttpRequest.newBuilder(URI.create(server + "/readyz")).timeout(Duration.ofSeconds(5)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        return new Readiness(answer.statusCode(), answer.body());
    }
}
