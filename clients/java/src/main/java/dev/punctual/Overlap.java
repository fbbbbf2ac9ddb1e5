package dev.punctual;

/**
 * What becomes of a repeat's occurrences that fall due while its firing is still
 * leased: {@link #SKIP} (the server's default), {@link #QUEUE} or {@link #ALLOW}. Set
 * with {@link TaskSpec#overlap}; read back with {@link Task#timing()}.
 */
public enum Overlap {
    /** They are dropped: the next occurrence is the first after the firing ends. */
    SKIP,
    /** The latest of them fires as soon as the firing ends, the others are dropped. */
    QUEUE,
    /**
     * Each occurrence fires as a task of its own, keyed {@code <key>@<scheduled_for>}
     * (RFC 3339 in UTC with milliseconds, e.g. {@code tick@2026-10-03T10:00:00.000Z}), with
     * the repeat's payload and tags, and the repeat moves to its next occurrence at once,
     * so occurrences fire side by side. The server refuses a key longer than 487 bytes
     * under it (field {@code overlap}).
     */
    ALLOW;

    /** The name the API uses: {@code skip}, {@code queue} or {@code allow}. */
    public String wire() { return Json.wire(this); }

    /** The policy the API names {@code wire}. */
    public static Overlap fromWire(String wire) {
        return Json.fromWire(Overlap.class, wire);
    }
}
