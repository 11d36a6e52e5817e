package io.lobstream.store.index;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
 * @param contentType a media type such as {@code image/png}, or null (served as application/octet-stream)
 * @param metadata    user metadata, keys in order
 */
public record Attributes(String contentType, Map<String, String> metadata) {
    public static final Attributes NONE = new Attributes(null, Map.of());
    /** Bytes of content type, keys and values together, at most: they travel in every answer's headers. */
    public static final int MAX_BYTES = 8192;
    private static final Pattern KEY = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");
    /** Visible ASCII and spaces: no CR or LF (a header of its own), no other control characters. */
    private static final Pattern HEADER_SAFE = Pattern.compile("[\\x20-\\x7E]*");

    public Attributes {
        contentType = contentType == null || contentType.isEmpty() ? null : contentType;
        metadata = metadata == null ? Map.of() : java.util.Collections.unmodifiableMap(new TreeMap<>(metadata));
    }

    public static Attributes of(String contentType, Map<String, String> metadata) {
        Attributes a = new Attributes(contentType, metadata);
        return a.equals(NONE) ? NONE : a;
    }

    /** Why these attributes cannot be stored, or null if they can. */
    public String problem() {
        if (contentType != null && !HEADER_SAFE.matcher(contentType).matches()) {
            return "content type with characters an HTTP header cannot carry: " + quoted(contentType);
        }
        int bytes = contentType == null ? 0 : contentType.length();
        for (Map.Entry<String, String> e : metadata.entrySet()) {
            if (!KEY.matcher(e.getKey()).matches()) {
                return "metadata key " + quoted(e.getKey()) + ": letters, digits, '.', '_' and '-' only, not first";
            }
            if (!HEADER_SAFE.matcher(e.getValue()).matches()) {
                return "metadata " + e.getKey() + " has characters an HTTP header cannot carry: " + quoted(e.getValue());
            }
            bytes += e.getKey().length() + e.getValue().length();
        }
        return bytes > MAX_BYTES ? "content type and metadata of " + bytes + " bytes, over " + MAX_BYTES : null;
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
        int n = in.readInt();
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
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }
}
