package com.example.reminders;

import dev.punctual.spring.PunctualTemplate;
import java.util.Optional;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/**
 * The workflow's steps (the table {@code workflow_steps}) and their reminders. What the
 * seed's {@code submit()} did with a Redis key and a one-day TTL is two tasks scheduled in
 * the step's own transaction: sent once it commits, dropped when it rolls back. The step
 * done cancels both.
 */
@Service
public class Workflow {
    static final String REMIND_ASSIGNEE = "flow.remind-assignee";
    static final String TELL_MANAGER = "flow.tell-manager";

    /** A step waiting for its assignee. */
    public record Step(String taskId, String instance, String title, String assignee, String manager) {
        StepKey key() { return new StepKey(taskId, instance); }
    }

    /**
     * A step's task key: its ids as the seed's Redis key held them after its prefix,
     * {@code taskId@instance}. A third part, the receiver the seed appended, is ignored,
     * so keys moved over by {@code punctual import keyspace --strip-prefix} are read alike.
     */
    public record StepKey(String taskId, String instance) {
        static StepKey parse(String key) {
            String[] ids = key.split("@");
            if (ids.length < 2) throw new IllegalArgumentException("not a step's key (taskId@instance): " + key);
            return new StepKey(ids[0], ids[1]);
        }

        @Override
        public String toString() { return taskId + "@" + instance; }
    }

    private final JdbcTemplate db;
    private final PunctualTemplate punctual;
    private final ReminderDelays delays;

    Workflow(JdbcTemplate db, PunctualTemplate punctual, ReminderDelays delays) {
        this.db = db;
        this.punctual = punctual;
        this.delays = delays;
    }

    /** The step starts: remind its assignee after 24 hours, tell the manager after 48. */
    @Transactional
    public void stepStarted(Step step) {
        db.update("INSERT INTO workflow_steps (task_id, instance, title, assignee, manager, status) VALUES (?, ?, ?, ?, ?, 'PENDING')",
                step.taskId(), step.instance(), step.title(), step.assignee(), step.manager());
        String key = step.key().toString();
        punctual.schedule(REMIND_ASSIGNEE, key, null, delays.remindEvery());
        punctual.schedule(TELL_MANAGER, key, null, delays.tellManagerAfter());
    }

    /** The step is done: no more reminders. */
    @Transactional
    public void stepDone(StepKey step) {
        db.update("UPDATE workflow_steps SET status = 'DONE' WHERE task_id = ? AND instance = ?", step.taskId(), step.instance());
        punctual.cancel(REMIND_ASSIGNEE, step.toString());
        punctual.cancel(TELL_MANAGER, step.toString());
    }

    /**
     * The step, its reminder counted, while it is pending; empty once it is done. The
     * update holds the step's row until the caller's transaction ends, so
     * {@link #stepDone} waits for a reminder being sent and none is sent after it.
     */
    @Transactional(propagation = Propagation.MANDATORY)
    public Optional<Step> remindIfPending(StepKey step) {
        int pending = db.update("UPDATE workflow_steps SET reminders = reminders + 1 WHERE task_id = ? AND instance = ? AND status = 'PENDING'",
                step.taskId(), step.instance());
        return pending == 0 ? Optional.empty() : Optional.of(find(step));
    }

    /** The step, marked as told to its manager, when it is pending and was not told yet. */
    @Transactional(propagation = Propagation.MANDATORY)
    public Optional<Step> tellManagerOnce(StepKey step) {
        int pending = db.update("UPDATE workflow_steps SET manager_told = TRUE WHERE task_id = ? AND instance = ? AND status = 'PENDING' AND NOT manager_told",
                step.taskId(), step.instance());
        return pending == 0 ? Optional.empty() : Optional.of(find(step));
    }

    private Step find(StepKey step) {
        return db.queryForObject("SELECT task_id, instance, title, assignee, manager FROM workflow_steps WHERE task_id = ? AND instance = ?",
                (row, n) -> new Step(row.getString(1), row.getString(2), row.getString(3), row.getString(4), row.getString(5)),
                step.taskId(), step.instance());
    }
}
