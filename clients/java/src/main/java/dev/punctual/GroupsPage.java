package dev.punctual;

import java.util.List;

/** One page of a queue's groups, by name; {@code nextCursor} is null at the end. */
public record GroupsPage(List<GroupCounts> groups, String nextCursor) {}
