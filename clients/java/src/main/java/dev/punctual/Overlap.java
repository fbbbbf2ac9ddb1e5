package dev.punctual;

/**
 * What becomes of a repeat's occurrences that fall due while its firing is still
 * leased: {@link #SKIP} (the server's default) or {@link #QUEUE}. The API's
 * {@code allow} is refused by the server (a task has one firing at a time), so it has no
 * constant. Set with {@link TaskSpec#overlap}; read back with {@link Timing#of}.
 */
public enum Overlap {
    /** They are dropped: the next occurrence is the first after the firing ends. */
    SKIP,
    /** The latest of them fires as soon as the firing ends, the others are dropped. */
    QUEUE;

    /** The name the API uses: {@code skip} or {@code queue}. */
    public String wire() { return name().toLowerCase(); }

    /** The policy the API names {@code wire}. */
    public static Overlap fromWire(String wire) {
        for (Overlap o : values()) {
            if (o.wire().equals(wire)) return o;
        }
        throw new IllegalArgumentException("unknown overlap: " + wire);
    }
}
