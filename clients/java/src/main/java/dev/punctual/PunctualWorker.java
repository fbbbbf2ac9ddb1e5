package dev.punctual;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A pull worker: one long-poll loop and one executor per registered queue, the lease of
 * each running handler extended every {@code leaseFor / 3}, acks sent in batches.
 *
 * <p>{@link #stop(Duration)} stops leasing at once (an open long poll is aborted, which
 * makes the server release what it was about to hand out), lets running handlers finish
 * within the grace period and acks them; handlers still running after it are interrupted
 * and not acked, so their leases expire and the tasks come back. Connection errors are
 * retried with backoff forever and logged once per change of state; the worker never
 * dies of them.
 */
public final class PunctualWorker {
    private static final Logger LOG = System.getLogger("dev.punctual.worker");

    private final PunctualClient client;
    private final Duration leaseFor;
    private final Duration pollWait;
    private final Duration maxBackoff;
    private final List<QueueLoop> loops = new ArrayList<>();
    private final ScheduledExecutorService extender;
    private final LinkedBlockingQueue<Ack> acks = new LinkedBlockingQueue<>();
    private final AtomicBoolean stopping = new AtomicBoolean();
    /** Set once {@link #stop} has aborted every long poll in flight. */
    private volatile boolean leasingStopped;
    private final AtomicBoolean abandoned = new AtomicBoolean();
    private final CountDownLatch stopSignal = new CountDownLatch(1);
    private Thread acker;
    private volatile boolean started;

    private PunctualWorker(Builder b) {
        this.client = b.client != null ? b.client : PunctualClient.fromEnv();
        this.leaseFor = b.leaseFor;
        this.pollWait = b.pollWait;
        this.maxBackoff = b.maxBackoff;
        this.extender = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "punctual-extend"));
        b.handlers.forEach((queue, h) -> loops.add(new QueueLoop(queue, h.handler, h.concurrency)));
    }

    public static Builder builder() { return new Builder(); }

    public static final class Builder {
        private PunctualClient client;
        private Duration leaseFor = Duration.ofSeconds(30);
        private Duration pollWait = Duration.ofSeconds(20);
        private Duration maxBackoff = Duration.ofSeconds(5);
        private final Map<String, Registration> handlers = new LinkedHashMap<>();

        public Builder client(PunctualClient client) { this.client = client; return this; }
        /** How long each lease lasts (extended while the handler runs). */
        public Builder leaseFor(Duration leaseFor) { this.leaseFor = leaseFor; return this; }
        /** How long one long poll waits for a due task. */
        public Builder pollWait(Duration pollWait) { this.pollWait = pollWait; return this; }
        /** The longest wait between reconnection attempts. */
        public Builder maxBackoff(Duration maxBackoff) { this.maxBackoff = maxBackoff; return this; }
        /** Runs {@code handler} for the tasks of {@code queue}, at most {@code concurrency} at once. */
        public Builder handle(String queue, TaskHandler handler, int concurrency) {
            if (concurrency < 1) throw new IllegalArgumentException("concurrency must be at least 1");
            handlers.put(queue, new Registration(handler, concurrency));
            return this;
        }
        public PunctualWorker build() { return new PunctualWorker(this); }
    }

    private record Registration(TaskHandler handler, int concurrency) {}

    /** Starts leasing on every registered queue; returns at once. */
    public synchronized PunctualWorker start() {
        if (started) throw new IllegalStateException("already started");
        started = true;
        acker = daemon(this::ackLoop, "punctual-acks");
        acker.start();
        for (QueueLoop l : loops) l.start();
        return this;
    }

    /** True once {@link #stop} has begun and aborted its long polls: nothing more is leased. */
    public boolean isStopping() { return leasingStopped; }

    /**
     * Stops leasing, waits up to {@code grace} for running handlers and sends their acks;
     * interrupts the rest without acking them. Returns when done.
     */
    public void stop(Duration grace) throws InterruptedException {
        if (!stopping.compareAndSet(false, true)) return;
        LOG.log(Level.INFO, "punctual worker stopping (grace {0})", grace);
        stopSignal.countDown();
        for (QueueLoop l : loops) l.stopPolling();
        leasingStopped = true;
        long deadline = System.nanoTime() + grace.toNanos();
        boolean all = true;
        for (QueueLoop l : loops) {
            l.pool.shutdown();
            long left = Math.max(0, deadline - System.nanoTime());
            all &= l.pool.awaitTermination(left, TimeUnit.NANOSECONDS);
        }
        if (!all) {
            abandoned.set(true);
            LOG.log(Level.WARNING, "punctual worker: handlers still running after the grace period are interrupted and not acked; their tasks come back after the lease");
            for (QueueLoop l : loops) l.pool.shutdownNow();
        }
        for (QueueLoop l : loops) l.poller.join(5000);
        extender.shutdownNow();
        acks.add(POISON);
        acker.join(10_000);
        LOG.log(Level.INFO, "punctual worker stopped");
    }

    private static final Ack POISON = new Ack("", Outcome.done());

    private final class QueueLoop {
        final String queue;
        final TaskHandler handler;
        final int concurrency;
        final Semaphore slots;
        final ExecutorService pool;
        final Thread poller;
        volatile CompletableFuture<List<Delivery>> inFlight;
        boolean connected = true;

        QueueLoop(String queue, TaskHandler handler, int concurrency) {
            this.queue = queue;
            this.handler = handler;
            this.concurrency = concurrency;
            this.slots = new Semaphore(concurrency);
            this.pool = Executors.newFixedThreadPool(concurrency, r -> daemon(r, "punctual-" + queue));
            this.poller = daemon(this::run, "punctual-poll-" + queue);
        }

        void start() { poller.start(); }

        void stopPolling() {
            CompletableFuture<List<Delivery>> f = inFlight;
            if (f != null) f.cancel(true);
            poller.interrupt();
        }

        void run() {
            int failures = 0;
            while (!stopping.get()) {
                int n;
                try {
                    slots.acquire();
                    n = 1 + slots.drainPermits();
                } catch (InterruptedException e) {
                    break;
                }
                try {
                    inFlight = client.leaseAsync(queue, n, leaseFor, pollWait);
                    if (stopping.get()) inFlight.cancel(true);
                    List<Delivery> got = PunctualClient.join(inFlight);
                    if (!connected) {
                        LOG.log(Level.INFO, "punctual worker: queue {0}: connected again", queue);
                        connected = true;
                    }
                    failures = 0;
                    slots.release(n - got.size());
                    if (stopping.get()) {
                        // answered just as we stopped: not run, the leases expire
                        slots.release(got.size());
                        break;
                    }
                    for (Delivery d : got) pool.execute(() -> runOne(d));
                } catch (InterruptedException e) {
                    slots.release(n);
                    break;
                } catch (RuntimeException e) {
                    slots.release(n);
                    if (stopping.get()) break;
                    if (connected) {
                        LOG.log(Level.WARNING, "punctual worker: queue {0}: leasing failed, retrying with backoff: {1}", queue, e.getMessage());
                        connected = false;
                    }
                    failures++;
                    long cap = Math.min(maxBackoff.toMillis(), 100L << Math.min(failures, 10));
                    long wait = cap / 2 + ThreadLocalRandom.current().nextLong(cap / 2 + 1);
                    try {
                        if (stopSignal.await(wait, TimeUnit.MILLISECONDS)) break;
                    } catch (InterruptedException ie) {
                        break;
                    }
                }
            }
        }

        void runOne(Delivery d) {
            long every = Math.max(200, leaseFor.toMillis() / 3);
            ScheduledFuture<?> ext = extender.scheduleAtFixedRate(() -> {
                try {
                    client.extend(d.leaseId(), leaseFor);
                } catch (RuntimeException e) {
                    LOG.log(Level.WARNING, "punctual worker: extending the lease of {0}/{1} failed: {2}", queue, d.key(), e.getMessage());
                }
            }, every, every, TimeUnit.MILLISECONDS);
            Outcome outcome;
            try {
                outcome = handler.handle(d);
                if (outcome == null) outcome = Outcome.done();
            } catch (InterruptedException e) {
                outcome = null;
            } catch (Exception e) {
                outcome = Outcome.retry(e.toString());
            } finally {
                ext.cancel(false);
                slots.release();
            }
            if (outcome != null && !abandoned.get() && !Thread.currentThread().isInterrupted()) {
                acks.add(new Ack(d.leaseId(), outcome));
            }
        }
    }

    private void ackLoop() {
        boolean done = false;
        while (!done) {
            List<Ack> batch = new ArrayList<>();
            try {
                batch.add(acks.take());
            } catch (InterruptedException e) {
                return;
            }
            acks.drainTo(batch, 999);
            if (batch.remove(POISON)) done = true;
            if (!batch.isEmpty()) send(batch);
        }
    }

    private void send(List<Ack> batch) {
        for (int attempt = 1; attempt <= 10; attempt++) {
            try {
                List<Ack.Result> results = client.acks(batch);
                for (Ack.Result r : results) {
                    if (r.status() != 204) {
                        LOG.log(Level.WARNING, "punctual worker: ack of {0} refused: {1}", r.leaseId(), r.error() == null ? r.status() : r.error().getMessage());
                    }
                }
                return;
            } catch (RuntimeException e) {
                // an ack resent after it was applied is refused with 409, which is harmless
                LOG.log(Level.WARNING, "punctual worker: sending {0} acks failed (try {1}): {2}", batch.size(), attempt, e.getMessage());
                try {
                    Thread.sleep(Math.min(2000, 100L << attempt)); // backoff before resending the batch
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }
}
