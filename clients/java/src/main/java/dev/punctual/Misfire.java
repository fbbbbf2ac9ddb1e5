package dev.punctual;

/**
 * What becomes of a task's occurrences missed while no server ran or the queue was
 * paused: {@link #FIRE_ONCE} (the server's default), {@link #FIRE_ALL} or {@link #SKIP}.
 * Set with {@link TaskSpec#misfire}; read back with {@link Task#timing()}.
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
    public String wire() { return Json.wire(this); }

    /** The policy the API names {@code wire}. */
    public static Misfire fromWire(String wire) {
        return Json.fromWire(Misfire.class, wire);
    }
}
