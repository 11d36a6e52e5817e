package io.lobstream.ingest.http;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** How the node's endpoints answer: a short plain-text answer, and a body that cannot be finished. */
public final class Responses {
    private Responses() {
    }

    /** An error's reason, or a hint to retry, as the whole answer, written under {@code stalls} (see {@link #send}). */
    static void text(HttpExchange ex, int status, String text, StallWatchdog stalls) throws IOException {
        send(ex, status, "text/plain; charset=utf-8", text.getBytes(StandardCharsets.UTF_8), stalls);
    }

    /**
     * A whole answer; to a HEAD, its headers alone. Written under {@code stalls}, headers and body (unwatched where it is
     * null): a client that pipelines requests and reads nothing fills the socket with short answers too, and held a thread
     * of the node, and a value read's slot, for as long as it kept its connection.
     */
    public static void send(HttpExchange ex, int status, String contentType, byte[] body, StallWatchdog stalls) throws IOException {
        ex.getResponseHeaders().add("Content-Type", contentType);
        // a HEAD response has the headers of the GET response and never a body (RFC 9110 §9.3.2)
        boolean head = ex.getRequestMethod().equals("HEAD");
        if (head) {
            ex.getResponseHeaders().add("Content-Length", Integer.toString(body.length));
        }
        if (stalls == null) {
            ex.sendResponseHeaders(status, head ? -1 : body.length);
            if (!head) {
                ex.getResponseBody().write(body);
            }
            return;
        }
        try (StallWatchdog.Watch w = stalls.watch(ex)) {
            w.sendHeaders(status, head ? -1 : body.length);
            if (!head) {
                w.body().write(body, 0, body.length);
            }
        }
    }

    /**
     * A list-valued request header (If-Match, If-None-Match) as one value, or null if there is none: its field lines
     * joined with commas, which RFC 9110 §5.3 says means the same as one line. The first line alone would miss a tag
     * sent on the next.
     */
    static String listHeader(Headers headers, String name) {
        List<String> lines = headers.get(name);
        if (lines == null) {
            return null;
        }
        // an empty line adds no element (§5.6.1), and joined in would leave a list that does not parse
        List<String> elements = lines.stream().filter(line -> !line.isBlank()).toList();
        return lines.isEmpty() ? null : String.join(", ", elements); // only empty lines: an empty list, which names nothing
    }

    /** Whether the request is a GET or a HEAD, the only methods the node answers; any other is answered 405 here. */
    static boolean readOnly(HttpExchange ex, StallWatchdog stalls) throws IOException {
        String method = ex.getRequestMethod();
        if (method.equals("GET") || method.equals("HEAD")) {
            return true;
        }
        ex.getResponseHeaders().add("Allow", "GET, HEAD");
        text(ex, 405, "method " + method + " not allowed: GET or HEAD\n", stalls);
        return false;
    }

    /**
     * Ends an answer whose body failed after its status line went out: the connection is closed, so
     * the client sees fewer bytes than the Content-Length promised and knows the value is not whole.
     *
     * <p>This works only if the response body stream was not closed first. The JDK server closes the
     * connection when closing the exchange finds the body short; but closing a short body stream
     * first closes the exchange quietly, and the connection then stays open with nothing more to
     * send: the client waits for the missing bytes until its own timeout. So value bodies are
     * written without try-with-resources, and closed with the exchange.
     */
    static void cutShort(HttpExchange ex) {
        ex.close();
    }
}
