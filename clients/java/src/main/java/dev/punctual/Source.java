package dev.punctual;

/**
 * Where a queue's settings or a calendar come from: the API ({@code api}) or the
 * server's config file ({@code config}, changed only there: the API answers
 * {@link ConflictException} to a change).
 */
public enum Source { API, CONFIG }
