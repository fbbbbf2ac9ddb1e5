package dev.punctual.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import dev.punctual.NotFoundException;
import dev.punctual.PunctualClient;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * PunctualTemplate outside a transaction, sent at once: what the server holds after a
 * schedule (the payload as the application's mapper wrote it, the options), a
 * reschedule, a cancel and a cancel by tag, and the counter of its writes. The queue has
 * no handler, so the tasks stay to be read.
 */
@SpringBootTest(classes = TestApplication.class)
class TemplateTest {
    static final String QUEUE = "spring.template";

    @DynamicPropertySource
    static void server(DynamicPropertyRegistry registry) {
        registry.add("punctual.server", () -> PunctualServer.shared().url());
    }

    @Autowired PunctualTemplate template;
    @Autowired MeterRegistry meters;

    @Test
    void scheduleWritesTheTypedPayloadAndTheOptions() {
        Instant opened = Instant.parse("2026-11-30T09:00:00Z");
        template.schedule(QUEUE, "step-1", new TestApplication.Reminder("ana", 42, opened), Duration.ofHours(1),
                spec -> spec.tag("flow-1").maxAttempts(5));

        JsonNode task = client().get(QUEUE, "step-1");
        assertThat(task.path("payload").path("to").asText()).isEqualTo("ana");
        assertThat(task.path("payload").path("step").asInt()).isEqualTo(42);
        assertThat(task.path("payload").path("openedAt").asText()).isEqualTo("2026-11-30T09:00:00Z");
        assertThat(task.path("tags").get(0).asText()).isEqualTo("flow-1");
        assertThat(task.path("max_attempts").asInt()).isEqualTo(5);
        assertThat(dueAt(task)).isCloseTo(Instant.now().plus(Duration.ofHours(1)), within(1, ChronoUnit.MINUTES));
        assertThat(counted("schedule")).isGreaterThanOrEqualTo(1);
    }

    @Test
    void scheduleAtAnInstant() {
        Instant at = Instant.parse("2030-01-02T03:04:05Z");
        template.schedule(QUEUE, "at-1", null, at);

        assertThat(dueAt(client().get(QUEUE, "at-1"))).isEqualTo(at);
    }

    @Test
    void rescheduleReplacesTheDueTimeAndThePayload() {
        template.schedule(QUEUE, "again-1", new TestApplication.Reminder("ana", 1, Instant.EPOCH), Duration.ofHours(1));
        Instant later = Instant.parse("2031-05-06T07:08:09Z");
        template.reschedule(QUEUE, "again-1", new TestApplication.Reminder("ana", 2, Instant.EPOCH), later);

        JsonNode task = client().get(QUEUE, "again-1");
        assertThat(dueAt(task)).isEqualTo(later);
        assertThat(task.path("payload").path("step").asInt()).isEqualTo(2);
        assertThat(counted("reschedule")).isGreaterThanOrEqualTo(1);
    }

    @Test
    void cancelRemovesTheTaskAndAnUnknownKeyIsNoError() {
        template.schedule(QUEUE, "cancel-1", null, Duration.ofHours(1));
        template.cancel(QUEUE, "cancel-1");

        assertThrows(NotFoundException.class, () -> client().get(QUEUE, "cancel-1"));
        template.cancel(QUEUE, "cancel-1");
        assertThat(counted("cancel")).isGreaterThanOrEqualTo(2);
    }

    @Test
    void cancelByTagRemovesTheTasksOfTheTag() {
        template.schedule(QUEUE, "tag-a", null, Duration.ofHours(1), spec -> spec.tag("wf-9"));
        template.schedule(QUEUE, "tag-b", null, Duration.ofHours(2), spec -> spec.tag("wf-9"));
        template.schedule(QUEUE, "tag-other", null, Duration.ofHours(1), spec -> spec.tag("wf-10"));
        template.cancelByTag(QUEUE, "wf-9");

        assertThrows(NotFoundException.class, () -> client().get(QUEUE, "tag-a"));
        assertThrows(NotFoundException.class, () -> client().get(QUEUE, "tag-b"));
        assertThat(client().get(QUEUE, "tag-other").path("state").asText()).isEqualTo("scheduled");
        assertThat(counted("cancel_tag")).isGreaterThanOrEqualTo(1);
    }

    private PunctualClient client() { return template.client(); }

    private static Instant dueAt(JsonNode task) { return Instant.parse(task.path("due_at").asText()); }

    private double counted(String op) {
        Counter counter = meters.find("punctual.template.requests").tags("queue", QUEUE, "op", op, "route", "http").counter();
        return counter == null ? 0 : counter.count();
    }
}
