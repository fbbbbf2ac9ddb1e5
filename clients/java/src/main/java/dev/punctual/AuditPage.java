package dev.punctual;

import java.util.List;

/** One page of the audit log, newest first; {@code nextCursor} is null at the end. */
public record AuditPage(List<AuditEntry> entries, String nextCursor) {}
