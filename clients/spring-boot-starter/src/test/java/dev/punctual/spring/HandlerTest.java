package dev.punctual.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.punctual.NotFoundException;
import dev.punctual.PunctualClient;
import dev.punctual.Task;
import dev.punctual.TaskState;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code @PunctualHandler} methods against the real server: the payload bound to a
 * record, void as done, an exception as a retry, a returned Outcome sent as it is; each
 * measured by the {@code punctual.handler} timer; and the health indicator up.
 */
@SpringBootTest(classes = TestApplication.class)
class HandlerTest {
    @DynamicPropertySource
    static void server(DynamicPropertyRegistry registry) {
        registry.add("punctual.server", () -> PunctualServer.shared().url());
    }

    @Autowired TestApplication.Handlers handlers;
    @Autowired PunctualTemplate template;
    @Autowired MeterRegistry meters;
    @Autowired HealthEndpoint health;

    @Test
    void aRecordPayloadIsBoundAndVoidIsDone() throws Exception {
        var reminder = new TestApplication.Reminder("ana", 42, Instant.parse("2026-11-30T09:00:00Z"));
        template.schedule("spring.remind", "step-42", reminder, Duration.ZERO);

        assertThat(handlers.reminded.poll(10, TimeUnit.SECONDS)).isEqualTo(reminder);
        waitGone("spring.remind", "step-42");
        waitTimed("spring.remind", "done", "none");
    }

    @Test
    void anExceptionIsRetriedByTheBackoff() throws Exception {
        template.schedule("spring.flaky", "flaky-1", new TestApplication.Reminder("bo", 1, Instant.EPOCH), Duration.ZERO,
                spec -> spec.backoff(Duration.ofMillis(50), 1.0, Duration.ofMillis(50)));

        assertThat(handlers.flakyAttempts.poll(10, TimeUnit.SECONDS)).isEqualTo(1);
        assertThat(handlers.flakyAttempts.poll(10, TimeUnit.SECONDS)).isEqualTo(2);
        waitGone("spring.flaky", "flaky-1");
        waitTimed("spring.flaky", "retry", "IllegalStateException");
        waitTimed("spring.flaky", "done", "none");
    }

    @Test
    void aReturnedOutcomeIsSentAsItIs() throws Exception {
        template.schedule("spring.decide", "order-7", null, Duration.ZERO);

        assertThat(handlers.decided.poll(10, TimeUnit.SECONDS)).isEqualTo("order-7");
        PunctualClient client = template.client();
        PunctualServer.waitUntil(Duration.ofSeconds(10), "order-7 dead",
                () -> client.get("spring.decide", "order-7").state() == TaskState.DEAD);
        Task task = client.get("spring.decide", "order-7");
        assertThat(task.lastError()).contains("order is gone");
        waitTimed("spring.decide", "fail", "none");
    }

    @Test
    void theHealthIndicatorIsUpWithTheServer() {
        assertThat(health.healthForPath("punctual").getStatus()).isEqualTo(Status.UP);
    }

    private void waitGone(String queue, String key) {
        PunctualServer.waitUntil(Duration.ofSeconds(10), queue + "/" + key + " acked and gone", () -> {
            try {
                template.client().get(queue, key);
                return false;
            } catch (NotFoundException gone) {
                return true;
            }
        });
        assertThrows(NotFoundException.class, () -> template.client().get(queue, key));
    }

    /** The timer is recorded once the handler returned, just before the ack: wait for it as for the ack. */
    private void waitTimed(String queue, String outcome, String exception) {
        PunctualServer.waitUntil(Duration.ofSeconds(10), "punctual.handler " + queue + " " + outcome, () -> {
            Timer timer = meters.find("punctual.handler").tags("queue", queue, "outcome", outcome, "exception", exception).timer();
            return timer != null && timer.count() >= 1;
        });
    }
}
