package dev.punctual.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.punctual.NotFoundException;
import dev.punctual.PunctualClient;
import dev.punctual.TaskState;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/**
 * Closing the application context while a handler runs: the close waits in the
 * workers' stop for the handler, which finishes uninterrupted and is acknowledged
 * before the close returns; nothing more is leased meanwhile.
 */
class GracefulStopTest {
    static final String QUEUE = "spring.stop";

    @SpringBootConfiguration
    @EnableAutoConfiguration(exclude = DataSourceAutoConfiguration.class)
    @Import(Slow.class)
    static class App {}

    static class Slow {
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        volatile boolean finished;

        @PunctualHandler(queue = QUEUE)
        void handle() throws InterruptedException {
            started.countDown();
            release.await();
            finished = true;
        }
    }

    @Test
    void closingTheContextLetsTheHandlerInFlightFinish() throws Exception {
        PunctualServer server = PunctualServer.shared();
        ConfigurableApplicationContext context = new SpringApplicationBuilder(App.class)
                .properties("punctual.server=" + server.url(), "punctual.worker.shutdown-grace=30s")
                .run();
        Slow slow = context.getBean(Slow.class);
        PunctualTemplate template = context.getBean(PunctualTemplate.class);
        PunctualClient client = PunctualClient.builder().server(server.url()).build();

        template.schedule(QUEUE, "in-flight", null, Duration.ZERO);
        assertThat(slow.started.await(10, TimeUnit.SECONDS)).as("the handler started").isTrue();
        template.schedule(QUEUE, "waiting", null, Duration.ZERO); // due, but the one slot is taken

        Thread closer = new Thread(context::close, "closer");
        closer.start();
        // The worker has stopped leasing once its stop waits for the handlers' pool to end;
        // released before, the handler would free its slot to a last lease.
        PunctualServer.waitUntil(Duration.ofSeconds(10), "the worker's stop to wait for its handlers",
                () -> Thread.getAllStackTraces().entrySet().stream().anyMatch(thread ->
                        thread.getKey().getName().equals("punctual-stop") && Arrays.stream(thread.getValue())
                                .anyMatch(frame -> frame.getMethodName().equals("awaitTermination"))));
        assertThat(closer.isAlive()).isTrue();

        slow.release.countDown();
        closer.join(TimeUnit.SECONDS.toMillis(20));
        assertThat(closer.isAlive()).as("the close returned").isFalse();
        assertThat(slow.finished).as("the handler finished").isTrue();
        assertThrows(NotFoundException.class, () -> client.get(QUEUE, "in-flight"), "acknowledged done before the close returned");
        assertThat(client.get(QUEUE, "waiting").state()).isEqualTo(TaskState.SCHEDULED);
    }
}
