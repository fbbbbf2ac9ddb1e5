package com.example.reminders;

import com.example.reminders.Workflow.StepKey;
import dev.punctual.Delivery;
import dev.punctual.Outcome;
import dev.punctual.spring.PunctualHandler;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * The seed's strategy beans ({@code IMessageHandler}s registered by key prefix in a
 * {@code MessageHandlerManager}), one handler method per queue. The queue picks the
 * method, so there is no prefix to match; a task is leased to one instance at a time,
 * so there is no Redis lock; "remind again tomorrow" is the answer
 * {@link Outcome#reschedule}, not a key written back. Each method runs in a transaction
 * that holds the step's row (see {@link Workflow#remindIfPending}); a message that cannot
 * be sent throws, and the task is tried again.
 */
@Component
public class OverdueReminders {
    private final Workflow workflow;
    private final Notifier notifier;
    private final ReminderDelays delays;

    OverdueReminders(Workflow workflow, Notifier notifier, ReminderDelays delays) {
        this.workflow = workflow;
        this.notifier = notifier;
        this.delays = delays;
    }

    @PunctualHandler(queue = Workflow.REMIND_ASSIGNEE, concurrency = 4)
    @Transactional
    public Outcome remindAssignee(Delivery delivery) {
        var step = workflow.remindIfPending(StepKey.parse(delivery.key()));
        if (step.isEmpty()) return Outcome.done(); // done meanwhile: nothing to say, no more reminders
        notifier.send(step.get().assignee(), step.get().title() + " is overdue, please handle it promptly");
        return Outcome.reschedule(delays.remindEvery()); // still pending: again in 24 hours
    }

    @PunctualHandler(queue = Workflow.TELL_MANAGER, concurrency = 4)
    @Transactional
    public void tellManager(Delivery delivery) {
        workflow.tellManagerOnce(StepKey.parse(delivery.key())).ifPresent(step -> notifier.send(step.manager(),
                step.title() + ", assigned to " + step.assignee() + ", is overdue: please follow it up"));
    }
}
