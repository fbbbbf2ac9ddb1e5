package dev.punctual.spring;

import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * Actuator's {@code punctual} health: up when the server answers {@code GET /readyz}
 * with 200 (its store reachable), down with the status and the server's answer
 * otherwise, or with the error when it does not answer.
 */
final class PunctualHealthIndicator extends AbstractHealthIndicator {
    private final PunctualClientAdapter adapter;

    PunctualHealthIndicator(PunctualClientAdapter adapter) {
        super("punctual server not reachable");
        this.adapter = adapter;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) throws Exception {
        PunctualClientAdapter.Readiness ready = adapter.readiness();
        builder.withDetail("server", adapter.client().server()).withDetail("readyz", ready.status());
        if (ready.status() == 200) {
            builder.up();
        } else {
            builder.down().withDetail("answer", ready.body());
        }
    }
}
