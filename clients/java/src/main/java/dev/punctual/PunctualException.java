package dev.punctual;

/**
 * An error answered by the punctual server (or, for {@link UnavailableException}, the
 * server not being reachable). {@link #code()} is the API's error code, e.g.
 * {@code not_found}; {@link #status()} the HTTP status (0 when no answer came).
 */
public class PunctualException extends RuntimeException {
    private final String code;
    private final String field;
    private final int status;

    public PunctualException(int status, String code, String message, String field) {
        this(status, code, message, field, null);
    }

    public PunctualException(int status, String code, String message, String field, Throwable cause) {
        super(message, cause);
        this.status = status;
        this.code = code;
        this.field = field;
    }

    public String code() { return code; }

    /** The request field the error is about, or null. */
    public String field() { return field; }

    public int status() { return status; }

    /** Builds the exception subclass matching an API error code. */
    public static PunctualException of(int status, String code, String message, String field) {
        String c = code == null ? "" : code;
        switch (c) {
            case "not_found": return new NotFoundException(status, message, field);
            case "conflict": return new ConflictException(status, message, field);
            case "invalid_argument": return new InvalidArgumentException(status, message, field);
            case "unauthorized": return new UnauthorizedException(status, message, field);
            case "forbidden": return new ForbiddenException(status, message, field);
            case "unavailable": return new UnavailableException(status, message, null);
            default: return new PunctualException(status, code, message, field);
        }
    }
}
