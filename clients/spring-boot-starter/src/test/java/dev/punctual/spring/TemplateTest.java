package dev.punctual.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import dev.punctual.NotFoundException;
import dev.punctual.PunctualClient;
import dev.punctual.Task;
import dev.punctual.TaskState;
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

        Task task = client().get(QUEUE, "step-1");
        // the payload as the application's mapper wrote it: the Instant as ISO-8601 text
        JsonNode payload = task.payloadJson();
        assertThat(payload.path("to").asText()).isEqualTo("ana");
        assertThat(payload.path("step").asInt()).isEqualTo(42);
        assertThat(payload.path("openedAt").asText()).isEqualTo("2026-11-30T09:00:00Z");
        assertThat(task.tags()).containsExactly("flow-1");
        assertThat(task.maxAttempts()).isEqualTo(5);
        assertThat(task.dueAt()).isCloseTo(Instant.now().plus(Duration.ofHours(1)), within(1, ChronoUnit.MINUTES));
        assertThat(counted("schedule")).isGreaterThanOrEqualTo(1);
    }

    @Test
    void scheduleAtAnInstant() {
        Instant at = Instant.parse("2030-01-02T03:04:05Z");
        template.schedule(QUEUE, "at-1", null, at);

        assertThat(client().get(QUEUE, "at-1").dueAt()).isEqualTo(at);
    }

    @Test
    void rescheduleReplacesTheDueTimeAndThePayload() {
        template.schedule(QUEUE, "again-1", new TestApplication.Reminder("ana", 1, Instant.EPOCH), Duration.ofHours(1));
        Instant later = Instant.parse("2031-05-06T07:08:09Z");
        template.reschedule(QUEUE, "again-1", new TestApplication.Reminder("ana", 2, Instant.EPOCH), later);

        Task task = client().get(QUEUE, "again-1");
        assertThat(task.dueAt()).isEqualTo(later);
        assertThat(task.payloadJson().path("step").asInt()).isEqualTo(2);
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
        assertThat(client().get(QUEUE, "tag-other").state()).isEqualTo(TaskState.SCHEDULED);
        assertThat(counted("cancel_tag")).isGreaterThanOrEqualTo(1);
    }

    private PunctualClient client() { return template.client(); }

    private double counted(String op) {
        Counter counter = meters.find("punctual.template.requests").tags("queue", QUEUE, "op", op, "route", "http").counter();
        return counter == null ? 0 : counter.count();
    }
}
