package dev.punctual.spring;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Runs a worker per queue that has a {@link PunctualHandler} method, for as long as the
 * application context runs. Started last once the context is refreshed (every bean
 * made) and stopped first when it closes: leasing stops at once, handlers in flight
 * finish within {@code punctual.worker.shutdown-grace} and are acknowledged, the
 * workers stopping side by side so the grace is not paid once per queue.
 */
final class PunctualWorkers implements SmartLifecycle {
    private static final Log LOG = LogFactory.getLog(PunctualWorkers.class);

    private final PunctualHandlerRegistrar registrar;
    private final PunctualClientAdapter adapter;
    private final PunctualProperties properties;
    private final ObjectMapper mapper;
    private final PunctualMetrics metrics;
    private final List<PunctualClientAdapter.RunningWorker> running = new ArrayList<>();
    private volatile boolean started;

    PunctualWorkers(PunctualHandlerRegistrar registrar, PunctualClientAdapter adapter, PunctualProperties properties,
            ObjectMapper mapper, PunctualMetrics metrics) {
        this.registrar = registrar;
        this.adapter = adapter;
        this.properties = properties;
        this.mapper = mapper;
        this.metrics = metrics;
    }

    @Override
    public synchronized void start() {
        if (started) return;
        for (HandlerMethod handler : registrar.handlers()) {
            QueueSettings settings = properties.queue(handler.queue, handler.concurrency);
            if (!settings.enabled()) {
                LOG.info("punctual: queue " + handler.queue + " is not leased here (punctual.worker or the queue's enabled: false)");
                continue;
            }
            running.add(adapter.startWorker(handler.queue, settings, measured(handler)));
            LOG.info("punctual: leasing " + handler.queue + " for " + handler.name + ", " + settings.concurrency() + " at once");
        }
        started = true;
    }

    /** The handler as the worker runs it: timed, its outcome counted, a failure logged before it becomes a retry. */
    private PunctualClientAdapter.DeliveryHandler measured(HandlerMethod handler) {
        PunctualClientAdapter.DeliveryHandler bound = handler.bind(mapper);
        return delivery -> {
            long start = System.nanoTime();
            try {
                var outcome = bound.handle(delivery);
                metrics.handled(handler.queue, PunctualClientAdapter.kind(outcome), null, System.nanoTime() - start);
                return outcome;
            } catch (InterruptedException e) {
                throw e; // stopped past the grace: neither done nor retried, the lease expires
            } catch (Exception e) {
                metrics.handled(handler.queue, "retry", e, System.nanoTime() - start);
                LOG.warn("punctual: " + handler.name + " failed on " + PunctualClientAdapter.describe(delivery)
                        + "; it is retried by the task's backoff", e);
                throw e;
            }
        };
    }

    @Override
    public void stop() {
        List<PunctualClientAdapter.RunningWorker> workers;
        synchronized (this) {
            if (!started) return;
            started = false;
            workers = List.copyOf(running);
            running.clear();
        }
        Duration grace = properties.getWorker().getShutdownGrace();
        CompletableFuture<?>[] stops = workers.stream().map(worker -> CompletableFuture.runAsync(() -> {
            try {
                worker.stop(grace);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, task -> new Thread(task, "punctual-stop").start())).toArray(CompletableFuture[]::new);
        CompletableFuture.allOf(stops).join();
    }

    @Override
    public boolean isRunning() { return started; }
}
