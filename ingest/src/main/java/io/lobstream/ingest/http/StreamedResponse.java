package io.lobstream.ingest.http;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * One HTTP request whose response body is read straight from the socket, in the caller's thread:
 * how values move from node to node (the proxy) and from a node to the CLI's {@code get}.
 *
 * <p>Why not {@code java.net.http.HttpClient}: it hands a body over as a flow of 16 KiB buffers
 * through its own threads. Reading a 256 MiB value from a node on loopback took it 1.2–2.2 s and
 * 0.9–3.1 s of CPU (three rounds in one JVM, the first as cold as the CLI's);
 * {@code HttpURLConnection} took 0.41–0.47 s and 0.22–0.28 s of CPU (session 16). The CLI's
 * requests that carry no value (status, its HEAD for a version) keep HttpClient; a HEAD that must
 * wait out a rebalance as the values' GETs do ({@code replay --verify}'s) comes here too.
 */
public final class StreamedResponse implements Closeable {
    private final HttpURLConnection connection;
    private final int status;
    private InputStream body;

    private StreamedResponse(HttpURLConnection connection) throws IOException {
        this.connection = connection;
        this.status = connection.getResponseCode();
    }

    /**
     * Sends {@code method} (GET or HEAD) to {@code uri} with {@code headers}, and returns once the
     * response's headers are in.
     *
     * @param connectTimeout how long to wait for the connection
     * @param readTimeout    how long to wait for the response's headers, and then for each read of the body
     * @throws java.net.ConnectException        no connection: nothing listens at {@code uri}, the host is
     *                                          unknown, or the connection was not made within {@code connectTimeout}
     * @throws java.net.SocketTimeoutException  connected, but the response's headers did not come within {@code readTimeout}
     */
    public static StreamedResponse send(URI uri, String method, Map<String, String> headers, Duration connectTimeout,
                                        Duration readTimeout) throws IOException {
        return send(uri, method, headers, connectTimeout, readTimeout, null);
    }

    /** @param proxy how to reach {@code uri}; null: as the JVM's proxy settings say */
    public static StreamedResponse send(URI uri, String method, Map<String, String> headers, Duration connectTimeout,
                                        Duration readTimeout, java.net.Proxy proxy) throws IOException {
        HttpURLConnection c = (HttpURLConnection) (proxy == null ? uri.toURL().openConnection() : uri.toURL().openConnection(proxy));
        c.setRequestMethod(method);
        c.setInstanceFollowRedirects(false);
        c.setConnectTimeout((int) connectTimeout.toMillis());
        c.setReadTimeout((int) readTimeout.toMillis());
        c.setUseCaches(false);
        headers.forEach(c::setRequestProperty);
        try {
            c.connect();
        } catch (IOException e) {
            // a refused connection, an unknown host and a connect timeout all mean the same to a caller: nobody there
            java.net.ConnectException nobody = new java.net.ConnectException("cannot connect to " + uri.getAuthority() + ": "
                    + (e instanceof java.net.UnknownHostException ? "no such host" // (its message is the host alone)
                    : e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName()));
            nobody.initCause(e);
            c.disconnect();
            throw nobody;
        }
        try {
            return new StreamedResponse(c);
        } catch (IOException | RuntimeException e) {
            c.disconnect();
            throw e;
        }
    }

    public int statusCode() {
        return status;
    }

    public Optional<String> header(String name) {
        return Optional.ofNullable(connection.getHeaderField(name));
    }

    /** The names of the headers the server sent, as it spelt them (the status line's null key left out). */
    public List<String> headerNames() {
        return connection.getHeaderFields().keySet().stream().filter(java.util.Objects::nonNull).toList();
    }

    /** The Content-Length the server sent, if it sent one. */
    public OptionalLong contentLength() {
        long n = connection.getContentLengthLong();
        return n >= 0 ? OptionalLong.of(n) : OptionalLong.empty();
    }

    /** The body, as it streams; that of an error status too (empty if it has none). */
    public InputStream body() throws IOException {
        if (body == null) {
            InputStream in = status >= 400 ? connection.getErrorStream() : connection.getInputStream();
            body = in != null ? in : InputStream.nullInputStream();
        }
        return body;
    }

    /** Closes the body: read to its end, the connection goes back to the JDK's keep-alive pool. */
    @Override
    public void close() throws IOException {
        body().close();
    }
}
