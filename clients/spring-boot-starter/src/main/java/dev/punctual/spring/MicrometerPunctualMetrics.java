package dev.punctual.spring;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.TimeUnit;

/**
 * The starter's meters:
 * <ul>
 * <li>{@code punctual.handler} (timer): each handled task, tagged {@code queue},
 * {@code outcome} (done, retry, reschedule, fail) and {@code exception} (the simple
 * name of the exception thrown, {@code none});
 * <li>{@code punctual.template.requests} (counter): each write of PunctualTemplate,
 * tagged {@code queue}, {@code op} (schedule, reschedule, cancel, cancel_tag) and
 * {@code route} (http, outbox, dropped).
 * </ul>
 */
final class MicrometerPunctualMetrics implements PunctualMetrics {
    private final MeterRegistry registry;

    MicrometerPunctualMetrics(MeterRegistry registry) { this.registry = registry; }

    @Override
    public void handled(String queue, String outcome, Throwable error, long nanos) {
        Timer.builder("punctual.handler")
                .description("Tasks handled by @PunctualHandler methods")
                .tag("queue", queue)
                .tag("outcome", outcome)
                .tag("exception", error == null ? "none" : error.getClass().getSimpleName())
                .register(registry)
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void sent(String queue, String op, String route) {
        Counter.builder("punctual.template.requests")
                .description("Schedules and cancels of PunctualTemplate, by the route they left by")
                .tag("queue", queue)
                .tag("op", op)
                .tag("route", route)
                .register(registry)
                .increment();
    }
}
