package dev.punctual;

/** Which of a queue's tasks {@link PunctualClient#purge(String, PurgeState)} cancels. */
public enum PurgeState { SCHEDULED, DEAD, ALL }
