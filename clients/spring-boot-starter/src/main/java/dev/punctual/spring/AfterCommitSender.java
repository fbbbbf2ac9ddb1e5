package dev.punctual.spring;

import java.util.ArrayList;
import java.util.List;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Holds the writes made inside a transaction (a {@code @Transactional} method, a
 * {@code TransactionTemplate}) and sends them, in the order they were made, once it has
 * committed; a rollback drops them. Outside a transaction a write is sent at once.
 *
 * <p>One {@link Pending} per transaction, bound to it as a resource under this sender,
 * unbound when it is suspended (an inner {@code REQUIRES_NEW} one has its own) and when
 * it completes. The writes are sent after the commit, by the thread that committed:
 * should the server not answer then (after the client's retries), the commit stands and
 * the caller of the transactional method gets the exception. Where that gap matters,
 * the outbox ({@code punctual.outbox.table}) closes it.
 */
final class AfterCommitSender implements TaskSender {
    private final TaskSender now;
    private final PunctualMetrics metrics;

    AfterCommitSender(TaskSender now, PunctualMetrics metrics) {
        this.now = now;
        this.metrics = metrics;
    }

    @Override
    public void send(TaskRequest request) {
        if (!TransactionSynchronizationManager.isSynchronizationActive()) {
            now.send(request);
            return;
        }
        Pending pending = (Pending) TransactionSynchronizationManager.getResource(this);
        if (pending == null) {
            pending = new Pending();
            TransactionSynchronizationManager.bindResource(this, pending);
            TransactionSynchronizationManager.registerSynchronization(pending);
        }
        if (pending.committed) {
            now.send(request); // from another synchronization's afterCommit: the transaction is over
        } else {
            pending.requests.add(request);
        }
    }

    private final class Pending implements TransactionSynchronization {
        final List<TaskRequest> requests = new ArrayList<>();
        boolean committed;

        @Override
        public void suspend() { TransactionSynchronizationManager.unbindResource(AfterCommitSender.this); }

        @Override
        public void resume() { TransactionSynchronizationManager.bindResource(AfterCommitSender.this, this); }

        @Override
        public void afterCommit() {
            committed = true;
            RuntimeException failed = null;
            for (TaskRequest request : requests) {
                try {
                    now.send(request);
                } catch (RuntimeException e) {
                    if (failed == null) failed = e;
                    else failed.addSuppressed(e);
                }
            }
            requests.clear();
            if (failed != null) throw failed;
        }

        @Override
        public void afterCompletion(int status) {
            TransactionSynchronizationManager.unbindResourceIfPossible(AfterCommitSender.this);
            for (TaskRequest request : requests) metrics.sent(request.queue(), request.op().tag, "dropped");
            requests.clear();
        }
    }
}
