package com.example.reminders;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/** How long each reminder waits: application.yml's {@code reminders} block. */
@ConfigurationProperties("reminders")
public record ReminderDelays(Duration remindEvery, Duration tellManagerAfter, Duration cancelUnpaidAfter) {}
