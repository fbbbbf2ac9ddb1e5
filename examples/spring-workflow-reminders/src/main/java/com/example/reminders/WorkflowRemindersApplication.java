package com.example.reminders;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The seeds' application on punctual: a workflow step's assignee reminded every 24 hours
 * while it is pending and its manager told after 48 hours ({@link Workflow},
 * {@link OverdueReminders}), and an order cancelled when it is not paid within 30 minutes
 * ({@link Orders}). Where the seed had a Redis key with a TTL, a key-expiry listener, a
 * {@code MessageHandlerManager} of strategy beans chosen by key prefix and a Redis lock,
 * there are tasks scheduled by {@code PunctualTemplate} in the application's own
 * transactions and one {@code @PunctualHandler} method per queue.
 *
 * <p>With the profile {@code demo} ({@link Demo}) it plays the scenario once with seconds
 * for hours and exits 0 when everything happened as it should, 1 when something did not,
 * 2 on an error.
 */
@SpringBootApplication
@ConfigurationPropertiesScan
public class WorkflowRemindersApplication {
    public static void main(String[] args) {
        ConfigurableApplicationContext context = SpringApplication.run(WorkflowRemindersApplication.class, args);
        if (context.getEnvironment().matchesProfiles("demo")) {
            System.exit(SpringApplication.exit(context)); // the demo's verdict; the workers stop with the context
        }
    }
}
