package io.lobstream.ingest.http;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The preconditions a read of a value is subject to, in RFC 9110 §13.2.2's order: {@code If-Match}
 * (strong comparison, §13.1.1), then {@code If-None-Match} (weak comparison, §13.1.2). A value has no
 * {@code Last-Modified}, so the date preconditions are ignored, as §13.1.3 and §13.1.4 allow;
 * {@code If-Range} belongs to the range (§13.1.5) and is evaluated with it.
 */
final class Preconditions {
    /**
     * An entity tag in a list: optional weakness, then the quoted opaque part (§8.8.3), after any empty elements (§5.6.1:
     * {@code "a",, "b"}, as field lines joined make of a trailing comma). Possessive quantifiers, matched only where the
     * last tag ended ({@code lookingAt}): searching on from every position took time quadratic in the length of a value
     * of many spaces.
     */
    private static final Pattern TAG = Pattern.compile("[\\s,]*+(W/)?(\"[^\"]*+\")\\s*+(,|$)");

    enum Outcome {
        /** Serve the value. */
        PROCEED,
        /** 304: the client's copy is current. */
        NOT_MODIFIED,
        /** 412: the value is not the version the client asked for. */
        FAILED
    }

    private Preconditions() {
    }

    /**
     * @param ifMatch     the request's {@code If-Match}, or null
     * @param ifNoneMatch the request's {@code If-None-Match}, or null
     * @param etag        the current value's strong entity tag, quoted
     */
    static Outcome evaluate(String ifMatch, String ifNoneMatch, String etag) {
        if (ifMatch != null && !matches(ifMatch, etag, false)) {
            return Outcome.FAILED;
        }
        if (ifNoneMatch != null && matches(ifNoneMatch, etag, true)) {
            return Outcome.NOT_MODIFIED; // for GET and HEAD, the only methods read
        }
        return Outcome.PROCEED;
    }

    /**
     * Whether {@code header} ({@code *} or a list of entity tags) names the current value. A strong
     * comparison matches only a strong tag; a weak one ignores weakness. A list that does not parse
     * names nothing.
     */
    static boolean matches(String header, String etag, boolean weak) {
        if (header.strip().equals("*")) {
            return true; // any current value: there is one, the caller found it
        }
        Matcher m = TAG.matcher(header);
        int at = 0;
        while (at < header.length() && m.region(at, header.length()).lookingAt()) {
            if ((weak || m.group(1) == null) && m.group(2).equals(etag)) {
                return true;
            }
            at = m.end();
        }
        return false;
    }
}
