package dev.punctual.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.punctual.PunctualClient;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.jackson.JacksonAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * What the auto-configuration makes from what the application has, with Spring Boot's
 * ApplicationContextRunner: the route of the template by the class path, the meters and
 * the health indicator only with their libraries, the application's own client kept,
 * the per-queue settings bound from the bracketed keys, handlers refused at start with a
 * message that names them, and the health indicator down without a server.
 */
class AutoConfigurationTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class, PunctualAutoConfiguration.class,
                    PunctualHealthAutoConfiguration.class));

    @Test
    void writesAreSentAfterCommitWithSpringTxAndAtOnceWithout() {
        runner.run(context -> assertThat(context).getBean(TaskSender.class).isInstanceOf(AfterCommitSender.class));
        runner.withClassLoader(new FilteredClassLoader(TransactionSynchronizationManager.class))
                .run(context -> assertThat(context).getBean(TaskSender.class).isInstanceOf(HttpSender.class));
    }

    @Test
    void anOutboxTableWithoutADataSourceIsRefused() {
        runner.withPropertyValues("punctual.outbox.table=punctual_outbox").run(context ->
                assertThat(context).getFailure().rootCause().hasMessageContaining("punctual.outbox.table")
                        .hasMessageContaining("no DataSource"));
    }

    @Test
    void metersOnlyWithMicrometerAndHealthOnlyWithActuator() {
        runner.withBean(io.micrometer.core.instrument.simple.SimpleMeterRegistry.class).run(context ->
                assertThat(context).getBean(PunctualMetrics.class).isInstanceOf(MicrometerPunctualMetrics.class));
        runner.withClassLoader(new FilteredClassLoader(MeterRegistry.class))
                .run(context -> assertThat(context).doesNotHaveBean(PunctualMetrics.class).hasSingleBean(PunctualWorkers.class));
        runner.run(context -> assertThat(context).hasSingleBean(PunctualHealthIndicator.class));
        runner.withClassLoader(new FilteredClassLoader("org.springframework.boot.actuate.health"))
                .run(context -> assertThat(context).doesNotHaveBean(PunctualHealthIndicator.class));
        runner.withPropertyValues("management.health.punctual.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(PunctualHealthIndicator.class));
    }

    @Test
    void theApplicationsOwnClientIsKept() {
        PunctualClient own = PunctualClient.builder().server("http://127.0.0.1:1").build();
        runner.withBean(PunctualClient.class, () -> own).run(context ->
                assertThat(context.getBean(PunctualTemplate.class).client()).isSameAs(own));
    }

    @Test
    void queueSettingsOverrideTheWorkersAndTheAnnotation() {
        runner.withPropertyValues("punctual.worker.lease=10s", "punctual.queues.[order.cancel].concurrency=8",
                "punctual.queues.[order.cancel].poll-wait=2s", "punctual.queues.[flow.remind].enabled=false").run(context -> {
            PunctualProperties properties = context.getBean(PunctualProperties.class);
            QueueSettings cancel = properties.queue("order.cancel", 4);
            assertThat(cancel.concurrency()).isEqualTo(8);
            assertThat(cancel.pollWait()).hasSeconds(2);
            assertThat(cancel.lease()).hasSeconds(10);
            QueueSettings remind = properties.queue("flow.remind", 4);
            assertThat(remind.enabled()).isFalse();
            assertThat(remind.concurrency()).isEqualTo(4);
        });
    }

    @Test
    void theHealthIsDownWithoutAServer() throws IOException {
        int closed = PunctualServer.freePort();
        runner.withPropertyValues("punctual.server=http://127.0.0.1:" + closed).run(context ->
                assertThat(context.getBean(PunctualHealthIndicator.class).health().getStatus()).isEqualTo(Status.DOWN));
    }

    @Configuration(proxyBeanMethods = false)
    static class TwoHandlersOfAQueue {
        @Bean
        First first() { return new First(); }

        @Bean
        Second second() { return new Second(); }

        static class First {
            @PunctualHandler(queue = "order.cancel")
            void cancel(String payload) {}
        }

        static class Second {
            @PunctualHandler(queue = "order.cancel")
            void cancelToo(String payload) {}
        }
    }

    @Test
    void twoHandlersOfOneQueueAreRefused() {
        runner.withUserConfiguration(TwoHandlersOfAQueue.class).run(context ->
                assertThat(context).getFailure().rootCause().hasMessageContaining("queue order.cancel has two @PunctualHandler methods")
                        .hasMessageContaining("First.cancel").hasMessageContaining("Second.cancelToo"));
    }

    static class ReturnsAString {
        @PunctualHandler(queue = "order.cancel")
        String cancel(String payload) { return "done"; }
    }

    static class TakesTwoPayloads {
        @PunctualHandler(queue = "order.cancel")
        void cancel(String order, Long id) {}
    }

    @Test
    void handlersOfAnotherShapeAreRefused() {
        runner.withBean(ReturnsAString.class).run(context ->
                assertThat(context).getFailure().rootCause().hasMessageContaining("ReturnsAString.cancel returns String"));
        runner.withBean(TakesTwoPayloads.class).run(context ->
                assertThat(context).getFailure().rootCause().hasMessageContaining("takes two payload parameters"));
    }

    @Test
    void thePropertiesAreDescribedForIdes() throws IOException {
        try (InputStream metadata = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            assertThat(metadata).isNotNull();
            String json = new String(metadata.readAllBytes(), StandardCharsets.UTF_8);
            assertThat(json).contains("\"punctual.server\"", "\"punctual.worker.shutdown-grace\"", "\"punctual.queues\"",
                    "\"punctual.outbox.table\"", "How long stopping the application waits");
        }
    }
}
