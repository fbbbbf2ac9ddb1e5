package dev.punctual;

/**
 * The server answered {@code unavailable} (503: its store is down), or could not be
 * reached at all (status 0, the connection error as the cause) after the client's retries.
 */
public class UnavailableException extends PunctualException {
    public UnavailableException(int status, String message, Throwable cause) {
        super(status, "unavailable", message, null, cause);
    }
}
