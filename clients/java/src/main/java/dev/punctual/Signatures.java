package dev.punctual;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Checks {@code Punctual-Signature: t=<unix seconds>,v1=<hex>} of a webhook delivery, as
 * docs/webhooks.md specifies: HMAC-SHA256 keyed with the secret over
 * {@code "<t>.<raw body>"}, compared in constant time, refused when {@code t} is further
 * than the tolerance from now (either way, for clock skew).
 */
public final class Signatures {
    /** The tolerance commonly used: five minutes. */
    public static final Duration DEFAULT_TOLERANCE = Duration.ofMinutes(5);

    private Signatures() {}

    /** {@link #verify(byte[], String, String, Duration, Instant)} with five minutes and the current time. */
    public static boolean verify(byte[] body, String header, String secret) {
        return verify(body, header, secret, DEFAULT_TOLERANCE, Instant.now());
    }

    /** True when {@code header} is a valid signature of the raw {@code body} made with {@code secret} within {@code tolerance} of {@code now}. */
    public static boolean verify(byte[] body, String header, String secret, Duration tolerance, Instant now) {
        if (body == null || header == null || secret == null) return false;
        String t = null;
        String sent = null;
        for (String part : header.split(",")) {
            String p = part.trim();
            if (p.startsWith("t=")) t = p.substring(2);
            else if (p.startsWith("v1=") && sent == null) sent = p.substring(3);
        }
        if (t == null || sent == null) return false;
        long ts;
        try {
            ts = Long.parseLong(t);
        } catch (NumberFormatException e) {
            return false;
        }
        byte[] expected = HexFormat.of().formatHex(hmac(secret, t, body)).getBytes(StandardCharsets.US_ASCII);
        boolean same = MessageDigest.isEqual(expected, sent.getBytes(StandardCharsets.US_ASCII));
        boolean fresh = Math.abs(now.getEpochSecond() - ts) <= tolerance.getSeconds();
        return same && fresh;
    }

    /** The header value the server would send for {@code body} at {@code t} (for tests of receivers). */
    public static String sign(byte[] body, String secret, long t) {
        return "t=" + t + ",v1=" + HexFormat.of().formatHex(hmac(secret, Long.toString(t), body));
    }

    private static byte[] hmac(String secret, String t, byte[] body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            mac.update((t + ".").getBytes(StandardCharsets.UTF_8));
            return mac.doFinal(body);
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("HmacSHA256 is part of every Java runtime", e);
        }
    }
}
