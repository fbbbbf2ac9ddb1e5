package dev.punctual.spring;

/**
 * Where {@link PunctualTemplate}'s writes go; the auto-configuration picks one:
 * {@link OutboxSender} when an outbox table is set and a DataSource exists, else
 * {@link AfterCommitSender} when spring-tx is there, else {@link HttpSender}.
 */
interface TaskSender {
    void send(TaskRequest request);
}
