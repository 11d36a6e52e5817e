package io.lobstream.store.index;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * What a producer says about a value besides its bytes: its media type and user metadata. Kept
 * in the version's index entry (a few bytes, never in pages) and served as the HTTP
 * {@code Content-Type} and {@code X-LobStream-Meta-*} headers, so both must be safe in a header:
 * {@link #problem()} says what is not. A partial update or a move keeps the attributes of the
 * version it replaces.
 *
 * <p>Metadata keys are case-insensitive, as HTTP header names are (and the JDK's server sends them
 * in lower case but the first letter): they are kept in lower case, and of keys that differ only
 * in case the first in sort order wins.
 *
 * @param contentType a media type such as {@code image/png}, or null (served as application/octet-stream)
 * @param metadata    user metadata, keys in lower case and in order
 */
public record Attributes(String contentType, Map<String, String> metadata) {
    public static final Attributes NONE = new Attributes(null, Map.of());
    /** Bytes of the headers they make, at most: they travel in every answer. */
    public static final int MAX_BYTES = 8192;
    /** What a metadata header adds to its key and value: "X-LobStream-Meta-", ": " and CRLF. */
    private static final int HEADER_OVERHEAD = 21;
    private static final Pattern KEY = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");
    /**
     * Visible ASCII and spaces: no CR or LF (a header of its own), no other control characters; and no space at either end,
     * which every HTTP reader strips from a field value (RFC 9110 5.5), so that a value would not come back as it was stored.
     */
    private static final Pattern HEADER_SAFE = Pattern.compile("(?:[\\x21-\\x7E](?:[\\x20-\\x7E]*[\\x21-\\x7E])?)?");
    private static final String NOT_CARRIED = "characters an HTTP header cannot carry, or a space at either end (which HTTP drops)";

    public Attributes {
        contentType = contentType == null || contentType.isEmpty() ? null : contentType;
        Map<String, String> lower = new TreeMap<>();
        if (metadata != null) {
            new TreeMap<>(metadata).forEach((k, v) -> lower.putIfAbsent(k.toLowerCase(Locale.ROOT), v));
        }
        metadata = Collections.unmodifiableMap(lower);
    }

    public static Attributes of(String contentType, Map<String, String> metadata) {
        Attributes a = new Attributes(contentType, metadata);
        return a.equals(NONE) ? NONE : a;
    }

    /** Why these attributes cannot be stored, or null if they can. */
    public String problem() {
        if (contentType != null && !HEADER_SAFE.matcher(contentType).matches()) {
            return "content type with " + NOT_CARRIED + ": " + quoted(contentType);
        }
        int bytes = contentType == null ? 0 : contentType.length();
        for (Map.Entry<String, String> e : metadata.entrySet()) {
            String problem = problem(e.getKey(), e.getValue());
            if (problem != null) {
                return problem;
            }
            bytes += headerBytes(e);
        }
        return bytes > MAX_BYTES ? "content type and metadata making " + bytes + " bytes of headers, over " + MAX_BYTES : null;
    }

    private static String problem(String key, String value) {
        if (!KEY.matcher(key).matches()) {
            return "metadata key " + quoted(key) + ": letters, digits, '.', '_' and '-' only, not first";
        }
        if (!HEADER_SAFE.matcher(value).matches()) {
            return "metadata " + key + " has " + NOT_CARRIED + ": " + quoted(value);
        }
        return null;
    }

    private static int headerBytes(Map.Entry<String, String> e) {
        return HEADER_OVERHEAD + e.getKey().length() + e.getValue().length();
    }

    /**
     * These attributes less what {@link #problem()} finds: a content type or keys a header cannot carry, keys past the limit.
     * Spaces at either end are taken off, not the value with them: what every HTTP reader saw of a value a release that
     * allowed them stored, so a copy rebuilt from its commands serves what the copy it replaces did.
     */
    public Attributes headerSafe() {
        String type = contentType == null ? null : withoutEdgeSpaces(contentType);
        // a content type over the limit alone: dropped as the keys past it are, not the whole value refused with it
        type = type != null && HEADER_SAFE.matcher(type).matches() && type.length() <= MAX_BYTES ? type : null;
        int bytes = type == null ? 0 : type.length();
        Map<String, String> kept = new TreeMap<>();
        for (Map.Entry<String, String> e : metadata.entrySet()) {
            Map.Entry<String, String> trimmed = Map.entry(e.getKey(), withoutEdgeSpaces(e.getValue()));
            if (problem(trimmed.getKey(), trimmed.getValue()) == null && bytes + headerBytes(trimmed) <= MAX_BYTES) {
                kept.put(trimmed.getKey(), trimmed.getValue());
                bytes += headerBytes(trimmed);
            }
        }
        return of(type, kept);
    }

    /** {@code s} without the spaces at its ends (only spaces: a tab or another control character is refused anyway). */
    private static String withoutEdgeSpaces(String s) {
        int from = 0;
        int to = s.length();
        while (from < to && s.charAt(from) == ' ') {
            from++;
        }
        while (to > from && s.charAt(to - 1) == ' ') {
            to--;
        }
        return s.substring(from, to);
    }

    private static String quoted(String s) {
        String shown = s.length() > 60 ? s.substring(0, 60) + "…" : s;
        return "\"" + shown.replace("\r", "\\r").replace("\n", "\\n") + "\"";
    }

    void write(DataOutputStream out) throws IOException {
        writeString(out, contentType == null ? "" : contentType);
        out.writeInt(metadata.size());
        for (Map.Entry<String, String> e : metadata.entrySet()) {
            writeString(out, e.getKey());
            writeString(out, e.getValue());
        }
    }

    static Attributes read(DataInputStream in) throws IOException {
        String type = readString(in);
        int n = ExtentCodec.count(in, in.readInt(), 8); // two string lengths each
        Map<String, String> meta = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            meta.put(readString(in), readString(in));
        }
        return of(type, meta);
    }

    /** Length and UTF-8 bytes: writeUTF's modified UTF-8 stops at 64 KiB. */
    private static void writeString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }

    private static String readString(DataInputStream in) throws IOException {
        byte[] b = new byte[ExtentCodec.count(in, in.readInt(), 1)];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }
}
