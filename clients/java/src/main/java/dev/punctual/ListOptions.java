package dev.punctual;

import java.util.Objects;

/**
 * Which of a queue's tasks {@link PunctualClient#list(String, ListOptions)} and
 * {@link PunctualClient#listPage(String, ListOptions)} answer: those in one
 * {@link #state}, carrying one {@link #tag}, with pages of {@link #limit} tasks (1–1000;
 * the server's default without it) from {@link #cursor} (a page's
 * {@link Page#nextCursor()}). Immutable: each method answers a copy with one more
 * condition, so a value can be kept and reused.
 *
 * <pre>{@code client.listPage("order.cancel", ListOptions.create().state(TaskState.SCHEDULED).tag("wf-7").limit(100))}</pre>
 */
public final class ListOptions {
    private static final ListOptions NONE = new ListOptions(null, null, null, null);

    private final TaskState state;
    private final String tag;
    private final Integer limit; // null: the server's default
    private final String cursor;

    private ListOptions(TaskState state, String tag, Integer limit, String cursor) {
        this.state = state;
        this.tag = tag;
        this.limit = limit;
        this.cursor = cursor;
    }

    /** Every task, the server's page size, from the start. */
    public static ListOptions create() { return NONE; }

    /** Only tasks in {@code state}. */
    public ListOptions state(TaskState state) { return new ListOptions(Objects.requireNonNull(state, "state"), tag, limit, cursor); }

    /** Only tasks carrying {@code tag}. */
    public ListOptions tag(String tag) { return new ListOptions(state, Objects.requireNonNull(tag, "tag"), limit, cursor); }

    /** At most {@code limit} tasks a page, 1–1000 (sent as given: the server refuses others). */
    public ListOptions limit(int limit) { return new ListOptions(state, tag, limit, cursor); }

    /** From the page {@code cursor} names (a page's {@link Page#nextCursor()}). */
    public ListOptions cursor(String cursor) { return new ListOptions(state, tag, limit, Objects.requireNonNull(cursor, "cursor")); }

    /** The query string of {@code GET /v1/queues/{queue}/tasks}, with {@code cursor} in place of this one's. */
    String query(String cursor) {
        return PunctualClient.query("state", state == null ? null : state.wire(), "tag", tag,
                "limit", limit == null ? null : limit.toString(), "cursor", cursor);
    }

    String cursor() { return cursor; }
}
