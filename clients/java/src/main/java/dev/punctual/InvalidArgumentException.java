package dev.punctual;

/** The server answered {@code invalid_argument}; {@link #getField()} names the field. */
public class InvalidArgumentException extends PunctualException {
    public InvalidArgumentException(int status, String message, String field) {
        super(status, "invalid_argument", message, field);
    }

    public String getField() { return field(); }
}
