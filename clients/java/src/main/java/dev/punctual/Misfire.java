package dev.punctual;

/**
 * What becomes of a task's occurrences missed while no server ran or the queue was
 * paused: {@link #FIRE_ONCE} (the server's default), {@link #FIRE_ALL} or {@link #SKIP}.
 * Set with {@link TaskSpec#misfire}; read back with {@link Timing#of}.
 */
public enum Misfire {
    /** One firing stands in for all that were missed, then the schedule goes on from now. */
    FIRE_ONCE,
    /** Each missed occurrence fires, oldest first, at most {@link TaskSpec#catchUpMax} of them. */
    FIRE_ALL,
    /**
     * A first try leased later than {@link TaskSpec#misfireAfter} past its due time does
     * not fire: a repeat moves to its next occurrence after now, a one-off task ends.
     */
    SKIP;

    /** The name the API uses: {@code fire_once}, {@code fire_all} or {@code skip}. */
    public String wire() { return name().toLowerCase(); }

    /** The policy the API names {@code wire}. */
    public static Misfire fromWire(String wire) {
        for (Misfire m : values()) {
            if (m.wire().equals(wire)) return m;
        }
        throw new IllegalArgumentException("unknown misfire: " + wire);
    }
}
