package dev.punctual.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.punctual.NotFoundException;
import dev.punctual.Outcome;
import dev.punctual.Task;
import dev.punctual.TaskSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.stereotype.Component;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The README's three steps as they are written there ({@link Reminders} is its code):
 * the step opened schedules the reminder 24 hours out with the step's tag; made due now,
 * the handler mails and reschedules it 24 hours out; the step approved cancels it.
 */
@SpringBootTest(classes = ReadmeExampleTest.App.class)
class ReadmeExampleTest {
    @SpringBootConfiguration
    @EnableAutoConfiguration(exclude = DataSourceAutoConfiguration.class)
    @Import({Reminders.class, RecordingMailer.class})
    static class App {}

    interface Mailer {
        void send(String to, String text);
    }

    static class RecordingMailer implements Mailer {
        final BlockingQueue<String> sent = new LinkedBlockingQueue<>();

        @Override
        public void send(String to, String text) { sent.add(to + ": " + text); }
    }

    // ---- the README's code ----
    record ApprovalReminder(long stepId, String approver) {}

    @Component
    static class Reminders {
        private final PunctualTemplate punctual;
        private final Mailer mail; // yours

        Reminders(PunctualTemplate punctual, Mailer mail) {
            this.punctual = punctual;
            this.mail = mail;
        }

        void stepOpened(long stepId, String approver) {
            punctual.schedule("approval.remind", "step-" + stepId, new ApprovalReminder(stepId, approver),
                    Duration.ofHours(24), spec -> spec.tag("step-" + stepId));
        }

        void stepApproved(long stepId) {
            punctual.cancelByTag("approval.remind", "step-" + stepId);
        }

        @PunctualHandler(queue = "approval.remind", concurrency = 4)
        Outcome remind(ApprovalReminder reminder) {
            mail.send(reminder.approver(), "step " + reminder.stepId() + " waits for you");
            return Outcome.reschedule(Duration.ofHours(24)); // still open: remind again tomorrow
        }
    }
    // ---- end of the README's code ----

    @DynamicPropertySource
    static void server(DynamicPropertyRegistry registry) {
        registry.add("punctual.server", () -> PunctualServer.shared().url());
    }

    @Autowired Reminders reminders;
    @Autowired RecordingMailer mailer;
    @Autowired PunctualTemplate punctual;

    @Test
    void theReminderIsScheduledSentRescheduledAndCancelled() throws Exception {
        reminders.stepOpened(42, "ana");
        Task task = punctual.client().get("approval.remind", "step-42");
        assertThat(task.tags()).containsExactly("step-42");
        assertThat(task.dueAt()).isAfter(Instant.now().plus(Duration.ofHours(23)));

        // a day passes: the same task, due now
        punctual.client().schedule("approval.remind", "step-42",
                TaskSpec.create().payload(Map.of("stepId", 42, "approver", "ana")).tag("step-42"));
        assertThat(mailer.sent.poll(10, TimeUnit.SECONDS)).isEqualTo("ana: step 42 waits for you");
        PunctualServer.waitUntil(Duration.ofSeconds(10), "the reminder rescheduled a day out",
                () -> punctual.client().get("approval.remind", "step-42").dueAt().isAfter(Instant.now().plus(Duration.ofHours(23))));

        reminders.stepApproved(42);
        assertThrows(NotFoundException.class, () -> punctual.client().get("approval.remind", "step-42"));
    }
}
