package dev.punctual;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/** One page of a list; {@code nextCursor} is null at the end. */
public record Page(List<JsonNode> tasks, String nextCursor) {}
