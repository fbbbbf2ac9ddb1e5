package dev.punctual;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Checks {@code Punctual-Signature: t=<unix seconds>,v1=<hex>} of a webhook delivery, as
 * docs/webhooks.md specifies: HMAC-SHA256 keyed with the secret over
 * {@code "<t>.<raw body>"}, compared in constant time, refused when {@code t} is further
 * than the tolerance from now (either way, for clock skew).
 *
 * <p>While the server rotates a queue's secret the header holds one {@code v1} per secret,
 * the new one first; other fields are ignored. A receiver rotating its own secret passes
 * both, current and previous. A header is valid when any {@code v1} matches any secret.
 */
public final class Signatures {
    /** The tolerance commonly used: five minutes. */
    public static final Duration DEFAULT_TOLERANCE = Duration.ofMinutes(5);

    private Signatures() {}

    /** {@link #verify(byte[], String, List, Duration, Instant)} with one secret. */
    public static boolean verify(byte[] body, String header, String secret) {
        return verify(body, header, secret, DEFAULT_TOLERANCE, Instant.now());
    }

    /** {@link #verify(byte[], String, List, Duration, Instant)} with one secret. */
    public static boolean verify(byte[] body, String header, String secret, Duration tolerance, Instant now) {
        return secret != null && verify(body, header, List.of(secret), tolerance, now);
    }

    /** {@link #verify(byte[], String, List, Duration, Instant)} with five minutes and the current time. */
    public static boolean verify(byte[] body, String header, List<String> secrets) {
        return verify(body, header, secrets, DEFAULT_TOLERANCE, Instant.now());
    }

    /**
     * True when {@code header} is a valid signature of the raw {@code body} made with one of
     * {@code secrets} (e.g. the current and the previous during a rotation) within
     * {@code tolerance} of {@code now}.
     */
    public static boolean verify(byte[] body, String header, List<String> secrets, Duration tolerance, Instant now) {
        if (body == null || header == null || secrets == null) return false;
        String t = null;
        List<byte[]> sent = new ArrayList<>();
        for (String part : header.split(",")) {
            String p = part.trim();
            if (p.startsWith("t=")) t = p.substring(2);
            else if (p.startsWith("v1=")) sent.add(p.substring(3).getBytes(StandardCharsets.US_ASCII));
        }
        if (t == null || sent.isEmpty()) return false;
        long ts;
        try {
            ts = Long.parseLong(t);
        } catch (NumberFormatException e) {
            return false;
        }
        // Every pair is compared, each in constant time: which one matched is no secret.
        boolean same = false;
        for (String secret : secrets) {
            if (secret == null || secret.isEmpty()) continue; // no key: nothing it could have signed
            byte[] expected = HexFormat.of().formatHex(hmac(secret, t, body)).getBytes(StandardCharsets.US_ASCII);
            for (byte[] candidate : sent) same |= MessageDigest.isEqual(expected, candidate);
        }
        boolean fresh = Math.abs(now.getEpochSecond() - ts) <= tolerance.getSeconds();
        return same && fresh;
    }

    /** The header value the server would send for {@code body} at {@code t} (for tests of receivers). */
    public static String sign(byte[] body, String secret, long t) {
        return sign(body, List.of(secret), t);
    }

    /** The header a server rotating its secret would send: one {@code v1} per secret, in this order. */
    public static String sign(byte[] body, List<String> secrets, long t) {
        StringBuilder header = new StringBuilder("t=").append(t);
        for (String secret : secrets) {
            header.append(",v1=").append(HexFormat.of().formatHex(hmac(secret, Long.toString(t), body)));
        }
        return header.toString();
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
