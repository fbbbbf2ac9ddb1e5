package dev.punctual.spring;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code punctual.*} block of {@code application.yml}: the server, the workers'
 * defaults and each queue's own settings, and the outbox.
 *
 * <pre>
 * punctual:
 *   server: http://127.0.0.1:7575
 *   token: ${PUNCTUAL_TOKEN:}
 *   worker:
 *     lease: 30s
 *     shutdown-grace: 30s
 *   queues:
 *     "[order.cancel]":        # brackets keep the dot in the queue's name
 *       concurrency: 8
 * </pre>
 */
@ConfigurationProperties("punctual")
public class PunctualProperties {
    /** The punctual server's URL. */
    private String server = "http://127.0.0.1:7575";

    /** The bearer token, when the server is started with tokens. */
    private String token;

    /** Time limit of one request to the server (a long poll adds its wait). */
    private Duration timeout = Duration.ofSeconds(30);

    /** Defaults for every queue's worker. */
    private final Worker worker = new Worker();

    /** Each queue's worker settings, by queue name; they override {@code punctual.worker} and the handler's annotation. */
    private final Map<String, Queue> queues = new LinkedHashMap<>();

    /** Writes through the application's database instead of HTTP (docs/outbox.md). */
    private final Outbox outbox = new Outbox();

    public String getServer() { return server; }
    public void setServer(String server) { this.server = server; }
    public String getToken() { return token; }
    public void setToken(String token) { this.token = token; }
    public Duration getTimeout() { return timeout; }
    public void setTimeout(Duration timeout) { this.timeout = timeout; }
    public Worker getWorker() { return worker; }
    public Map<String, Queue> getQueues() { return queues; }
    public Outbox getOutbox() { return outbox; }

    /** The settings of {@code queue}'s worker: its own, else {@code punctual.worker}'s, its concurrency else the annotation's. */
    QueueSettings queue(String queue, int annotatedConcurrency) {
        Queue own = queues.getOrDefault(queue, new Queue());
        return new QueueSettings(
                own.enabled != null ? own.enabled : worker.enabled,
                own.concurrency != null ? own.concurrency : annotatedConcurrency,
                own.lease != null ? own.lease : worker.lease,
                own.pollWait != null ? own.pollWait : worker.pollWait);
    }

    public static class Worker {
        /** Whether the {@code @PunctualHandler} methods lease tasks in this application. */
        private boolean enabled = true;

        /** How long each lease lasts; extended while the handler runs. */
        private Duration lease = Duration.ofSeconds(30);

        /** How long one long poll waits for a due task. */
        private Duration pollWait = Duration.ofSeconds(20);

        /**
         * How long stopping the application waits for handlers in flight; those still
         * running after it are interrupted and not acknowledged, so their tasks come back
         * when their leases expire.
         */
        private Duration shutdownGrace = Duration.ofSeconds(30);

        public boolean isEnabled() { return enabled; }
        public void setEnabled(boolean enabled) { this.enabled = enabled; }
        public Duration getLease() { return lease; }
        public void setLease(Duration lease) { this.lease = lease; }
        public Duration getPollWait() { return pollWait; }
        public void setPollWait(Duration pollWait) { this.pollWait = pollWait; }
        public Duration getShutdownGrace() { return shutdownGrace; }
        public void setShutdownGrace(Duration shutdownGrace) { this.shutdownGrace = shutdownGrace; }
    }

    /** One queue's worker; a setting left out takes {@code punctual.worker}'s (concurrency: the annotation's). */
    public static class Queue {
        /** Whether this application leases the queue's tasks. */
        private Boolean enabled;

        /** Handlers of the queue running at once. */
        private Integer concurrency;

        /** How long each lease lasts. */
        private Duration lease;

        /** How long one long poll waits. */
        private Duration pollWait;

        public Boolean getEnabled() { return enabled; }
        public void setEnabled(Boolean enabled) { this.enabled = enabled; }
        public Integer getConcurrency() { return concurrency; }
        public void setConcurrency(Integer concurrency) { this.concurrency = concurrency; }
        public Duration getLease() { return lease; }
        public void setLease(Duration lease) { this.lease = lease; }
        public Duration getPollWait() { return pollWait; }
        public void setPollWait(Duration pollWait) { this.pollWait = pollWait; }
    }

    public static class Outbox {
        /**
         * The outbox table (punctual outbox init); set, and with a DataSource, every
         * schedule and cancel of PunctualTemplate is a row of it, written in the
         * application's transaction.
         */
        private String table;

        public String getTable() { return table; }
        public void setTable(String table) { this.table = table; }
    }
}
