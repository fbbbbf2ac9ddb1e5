package dev.punctual;

import java.util.Objects;

/**
 * The page a paged list answers: at most {@link #limit} items (1–1000; the server's
 * default without it) from {@link #cursor} (the previous page's {@code nextCursor}), for
 * {@link PunctualClient#deadPage}, {@link PunctualClient#groupsPage} and
 * {@link PunctualClient#auditPage}; the tasks' list filters too, with {@link ListOptions}.
 * Immutable like {@link ListOptions}.
 */
public final class PageOptions {
    private static final PageOptions FIRST = new PageOptions(null, null);

    private final Integer limit; // null: the server's default
    private final String cursor;

    private PageOptions(Integer limit, String cursor) {
        this.limit = limit;
        this.cursor = cursor;
    }

    /** The first page, of the server's size. */
    public static PageOptions create() { return FIRST; }

    /** At most {@code limit} items a page, 1–1000 (sent as given: the server refuses others). */
    public PageOptions limit(int limit) { return new PageOptions(limit, cursor); }

    /** From the page {@code cursor} names. */
    public PageOptions cursor(String cursor) {
        return new PageOptions(limit, Objects.requireNonNull(cursor, "cursor"));
    }

    /** The query string of a paged list, with {@code cursor} in place of this one's. */
    String query(String cursor) {
        return PunctualClient.query("limit", limit == null ? null : limit.toString(), "cursor", cursor);
    }

    String cursor() { return cursor; }
}
