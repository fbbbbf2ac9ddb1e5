package dev.punctual.spring;

import dev.punctual.Delivery;
import dev.punctual.Outcome;
import java.time.Instant;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.stereotype.Component;

/**
 * The application of {@link HandlerTest} and {@link TemplateTest} (one context, shared
 * by Spring's test context cache): auto-configured as an application would be, without
 * a database, its handlers reporting what they saw on queues the tests wait on.
 */
@SpringBootConfiguration
@EnableAutoConfiguration(exclude = DataSourceAutoConfiguration.class)
@Import(TestApplication.Handlers.class)
class TestApplication {
    /** The payload type: a record, bound by the application's Jackson mapper (an Instant included). */
    record Reminder(String to, int step, Instant openedAt) {}

    @Component
    static class Handlers {
        final BlockingQueue<Reminder> reminded = new LinkedBlockingQueue<>();
        final BlockingQueue<Integer> flakyAttempts = new LinkedBlockingQueue<>();
        final BlockingQueue<String> decided = new LinkedBlockingQueue<>();

        @PunctualHandler(queue = "spring.remind", concurrency = 2)
        void remind(Reminder reminder) {
            reminded.add(reminder);
        }

        @PunctualHandler(queue = "spring.flaky")
        void flaky(Delivery delivery, Reminder reminder) {
            flakyAttempts.add(delivery.attempt());
            if (delivery.attempt() == 1) throw new IllegalStateException("the first try of " + reminder.to() + " fails");
        }

        @PunctualHandler(queue = "spring.decide")
        Outcome decide(Delivery delivery) {
            decided.add(delivery.key());
            return Outcome.fail("order is gone");
        }
    }
}
