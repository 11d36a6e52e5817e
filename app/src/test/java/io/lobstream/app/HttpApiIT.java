package io.lobstream.app;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.lobstream.client.LobClient;
import io.lobstream.ingest.http.HttpServers;
import io.lobstream.store.LobStore;
import io.lobstream.app.cli.LobStreamCli;
import io.lobstream.app.embedded.EmbeddedCluster;
import io.lobstream.app.embedded.EmbeddedKafka;
import io.lobstream.ingest.LobNode;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.ingest.http.LobHttpServer;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.lobstream.app.Nodes.bytes;
import static io.lobstream.app.Nodes.get;
import static io.lobstream.app.Nodes.head;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The HTTP read API of two real writer nodes on one real broker, splitting four partitions:
 * every form of single range (RFC 9110 §14), If-Range, HEAD, 404, ETag = copy and origin version, and requests that reach
 * the node that does not own the key's partition.
 */
class HttpApiIT {
    @TempDir
    static Path dir;

    static EmbeddedCluster cluster;
    static LobNode a;
    static LobNode b;
    static LobClient client;

    static final int LEN = 10_000;
    /** A raw socket's reads: a node that stops answering fails the test, not surefire's fork timeout an hour on. */
    static final int SOCKET_READ_TIMEOUT_MS = 120_000;
    static String onA;          // owned by a
    static String onB;          // owned by b, with a space and a slash in its id
    static byte[] valueA;
    static byte[] valueB;

    @BeforeAll
    static void start() throws Exception {
        cluster = EmbeddedCluster.start(dir.resolve("cluster"), 0, 0, 0);
        // a cuts a response its client stopped reading after 3 s (60 s by default), for the test of it
        a = Nodes.start(Nodes.config(cluster, dir.resolve("a"), 4, "http-a", 1).with(LobStreamConfig.HTTP_STALL_TIMEOUT_MS.name(), 3000));
        b = Nodes.start(Nodes.config(cluster, dir.resolve("b"), 4, "http-b", 1));
        Nodes.awaitSplit(a, b, 4); // settled: which node owns each id is chosen once, below
        client = new LobClient(Nodes.config(cluster, dir.resolve("client"), 4, "", 1));
        onA = idOwnedBy(a, "on-a-");
        onB = idOwnedBy(b, "dir/on b ");
        valueA = bytes(LEN, 1);
        valueB = bytes(LEN, 2);
        client.put(onA, valueA, null).get();
        client.put(onB, valueB, null).get();
        awaitValue(a, onA, valueA);
        awaitValue(b, onB, valueB);
    }

    @AfterAll
    static void stop() {
        Nodes.closeAll(client, cluster, b, a);
    }

    static String idOwnedBy(LobNode owner, String prefix) {
        Set<Integer> mine = Nodes.partitions(owner);
        for (int i = 0; ; i++) {
            String id = prefix + i;
            if (mine.contains(Nodes.partitionOf(owner, id))) {
                return id;
            }
        }
    }

    static void awaitValue(LobNode node, String id, byte[] expected) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
            HttpResponse<byte[]> r = get(node, id, null);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(Arrays.mismatch(r.body(), expected)).as("first differing byte").isEqualTo(-1);
        });
    }

    static void assertPartial(HttpResponse<byte[]> r, byte[] value, int first, int last) {
        assertThat(r.statusCode()).as("status").isEqualTo(206);
        assertThat(r.headers().firstValue("Content-Range")).contains("bytes " + first + "-" + last + "/" + value.length);
        assertThat(r.headers().firstValueAsLong("Content-Length").orElse(-1)).isEqualTo(last - first + 1);
        assertThat(r.body()).isEqualTo(Arrays.copyOfRange(value, first, last + 1));
    }

    static void assertUnsatisfiable(HttpResponse<byte[]> r, long length) {
        assertThat(r.statusCode()).isEqualTo(416);
        assertThat(r.headers().firstValue("Content-Range")).contains("bytes */" + length);
        assertThat(r.body()).isEmpty();
    }

    /** Every range form, asked of the owner and of the other node (which proxies). */
    @Test
    void singleRangesOnOwnerAndOnTheOtherNode() throws Exception {
        for (LobNode via : new LobNode[]{a, b}) {
            for (String id : new String[]{onA, onB}) {
                byte[] v = id.equals(onA) ? valueA : valueB;
                assertPartial(get(via, id, "bytes=-100"), v, LEN - 100, LEN - 1);            // suffix
                assertPartial(get(via, id, "bytes=-" + (LEN * 3)), v, 0, LEN - 1);           // suffix longer than the value
                assertPartial(get(via, id, "bytes=0-0"), v, 0, 0);                            // first byte
                assertPartial(get(via, id, "bytes=" + (LEN - 1) + "-" + (LEN - 1)), v, LEN - 1, LEN - 1); // last byte
                assertPartial(get(via, id, "bytes=9990-"), v, 9990, LEN - 1);                 // open-ended
                assertPartial(get(via, id, "bytes=100-199999"), v, 100, LEN - 1);             // last-pos past the end
                assertUnsatisfiable(get(via, id, "bytes=" + LEN + "-"), LEN);
                assertUnsatisfiable(get(via, id, "bytes=20000-20010"), LEN);
                assertUnsatisfiable(get(via, id, "bytes=-0"), LEN);
                for (String ignored : new String[]{"bytes=5-3", "bytes=0-1,5-6", "items=0-1", "bytes=x-y"}) {
                    HttpResponse<byte[]> whole = get(via, id, ignored);                        // invalid or multiple: the whole value
                    assertThat(whole.statusCode()).as(ignored).isEqualTo(200);
                    assertThat(whole.body()).as(ignored).isEqualTo(v);
                    assertThat(whole.headers().firstValue("Content-Range")).as(ignored).isEmpty();
                }
            }
        }
    }

    /** RFC 9110 13.1.5: a resumed download gets the range only of the version it started on, else the whole value. */
    @Test
    void ifRangeServesTheRangeOnlyOfTheVersionItNames() throws Exception {
        for (LobNode via : new LobNode[]{a, b}) {
            String etag = get(via, onB, null).headers().firstValue("ETag").orElseThrow();
            for (String[] c : new String[][]{{etag, "206"}, {"\"no-such-version\"", "200"}, {"Sat, 29 Oct 1994 19:43:31 GMT", "200"}}) {
                HttpResponse<byte[]> r = Nodes.HTTP.send(HttpRequest.newBuilder(Nodes.uri(via, onB)).header("Range", "bytes=0-9")
                        .header("If-Range", c[0]).build(), HttpResponse.BodyHandlers.ofByteArray());
                assertThat(r.statusCode()).as(c[0]).isEqualTo(Integer.parseInt(c[1]));
                assertThat(r.body()).as(c[0]).isEqualTo(c[1].equals("206") ? Arrays.copyOf(valueB, 10) : valueB);
            }
        }
    }

    /** RFC 9110 13.1.1, 13.1.2: If-None-Match naming the current version is 304, If-Match naming another is 412, from either node. */
    @Test
    void ifMatchAndIfNoneMatchAreEvaluated() throws Exception {
        for (LobNode via : new LobNode[]{a, b}) {
            String etag = get(via, onB, null).headers().firstValue("ETag").orElseThrow();
            HttpResponse<byte[]> notModified = Nodes.HTTP.send(HttpRequest.newBuilder(Nodes.uri(via, onB)).header("If-None-Match", etag).build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            assertThat(notModified.statusCode()).isEqualTo(304);
            assertThat(notModified.body()).isEmpty();
            assertThat(notModified.headers().firstValue("ETag")).contains(etag);
            // RFC 9110 §5.3: a list sent as two field lines is the one list, the current version named on the second
            HttpResponse<byte[]> twoLines = Nodes.HTTP.send(HttpRequest.newBuilder(Nodes.uri(via, onB)).header("If-None-Match", "\"c0.1\"")
                    .header("If-None-Match", etag).build(), HttpResponse.BodyHandlers.ofByteArray());
            assertThat(twoLines.statusCode()).isEqualTo(304);

            HttpResponse<byte[]> stale = Nodes.HTTP.send(HttpRequest.newBuilder(Nodes.uri(via, onB)).header("If-Match", "\"c0.1\"").build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            assertThat(stale.statusCode()).isEqualTo(412);
            assertThat(stale.headers().firstValue("ETag")).contains(etag);
            assertThat(stale.headers().firstValue("X-LobStream-Node")).as("via " + via.httpPort()).contains("127.0.0.1:" + via.httpPort());

            HttpResponse<byte[]> current = Nodes.HTTP.send(HttpRequest.newBuilder(Nodes.uri(via, onB)).header("If-Match", etag)
                    .header("If-None-Match", "\"c0.1\"").build(), HttpResponse.BodyHandlers.ofByteArray());
            assertThat(current.statusCode()).isEqualTo(200);
            assertThat(current.body()).isEqualTo(valueB);
        }
    }

    /** The node's other endpoints answer GET and HEAD (headers alone), and 405 to anything else. */
    @Test
    void statusAnswersHeadWithoutABodyAndRefusesOtherMethods() throws Exception {
        URI status = URI.create("http://127.0.0.1:" + a.httpPort() + "/status");
        HttpResponse<byte[]> head = Nodes.HTTP.send(HttpRequest.newBuilder(status).method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertThat(head.statusCode()).isEqualTo(200);
        assertThat(head.body()).isEmpty();
        assertThat(head.headers().firstValue("Content-Type")).contains("application/json");
        HttpResponse<String> post = Nodes.HTTP.send(HttpRequest.newBuilder(status).POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(post.statusCode()).isEqualTo(405);
        assertThat(post.headers().firstValue("Allow")).contains("GET, HEAD");
        // the JDK matches by prefix: these were the status, and an fsck that takes every tablespace's latch
        for (String path : List.of("/statusx", "/status/x", "/fsck.json", "/metricsx")) {
            HttpResponse<String> other = Nodes.HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + a.httpPort() + path))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(other.statusCode()).as(path).isEqualTo(404);
            assertThat(other.body()).as(path).startsWith("no such endpoint " + path);
        }
    }

    /** An id's UTF-8 sent unescaped, as curl sends what is typed: looked up as "cafÃ©", and forwarded as yet another id. */
    @Test
    void anIdSentAsRawUtf8IsTheSameIdOnBothNodes() throws Exception {
        String id = idOwnedBy(a, "café-");
        byte[] value = bytes(1000, 5);
        client.put(id, value, null).applied(Duration.ofSeconds(60)).get();
        for (LobNode via : List.of(a, b)) {
            try (Socket socket = new Socket("127.0.0.1", via.httpPort())) {
                socket.setSoTimeout(SOCKET_READ_TIMEOUT_MS);
                socket.getOutputStream().write(("GET /lobs/" + id + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
                        .getBytes(StandardCharsets.UTF_8));
                String answer = new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
                assertThat(answer).as("via " + via.httpPort()).startsWith("HTTP/1.1 200").containsIgnoringCase("Content-Length: 1000");
            }
        }
        // what README says: a byte from 0x80 to 0xA0 (ß is C3 9F) the JDK's server refuses before the node sees it
        try (Socket socket = new Socket("127.0.0.1", a.httpPort())) {
            socket.setSoTimeout(SOCKET_READ_TIMEOUT_MS);
            socket.getOutputStream().write("GET /lobs/Straße HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".getBytes(StandardCharsets.UTF_8));
            assertThat(new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1)).startsWith("HTTP/1.1 400");
        }
    }

    /** {@code /fsck} takes data=true or false and nothing else: another query is a 400 saying so, not an fsck of other scope. */
    @Test
    void fsckRefusesAQueryItDoesNotKnow() throws Exception {
        String fsck = "http://127.0.0.1:" + a.httpPort() + "/fsck";
        HttpResponse<String> unknown = Nodes.HTTP.send(HttpRequest.newBuilder(URI.create(fsck + "?data=maybe")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(unknown.statusCode()).isEqualTo(400);
        assertThat(unknown.body()).contains("data=true|false");
        HttpResponse<String> whole = Nodes.HTTP.send(HttpRequest.newBuilder(URI.create(fsck + "?data=true")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(whole.statusCode()).isEqualTo(200);
        assertThat(new ObjectMapper().readTree(whole.body()).path("fsck_ok").asBoolean()).as(whole.body()).isTrue();
    }

    /** A value's GET with a body is refused: unread, the body would let the server's request timer cut the download. */
    @Test
    void aValuesGetWithABodyIsABadRequest() throws Exception {
        URI value = URI.create("http://127.0.0.1:" + a.httpPort() + "/lobs/" + onA);
        HttpResponse<String> r = Nodes.HTTP.send(HttpRequest.newBuilder(value).method("GET", HttpRequest.BodyPublishers.ofString("{}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("takes no request body");
    }

    @Test
    void headSendsTheHeadersOfGetAndNoBody() throws Exception {
        for (LobNode via : new LobNode[]{a, b}) {
            HttpResponse<byte[]> full = get(via, onA, null);
            HttpResponse<byte[]> h = head(via, onA, null);
            assertThat(h.statusCode()).isEqualTo(200);
            assertThat(h.body()).isEmpty();
            assertThat(h.headers().firstValue("Content-Length")).contains(Integer.toString(LEN));
            assertThat(h.headers().firstValue("ETag")).isEqualTo(full.headers().firstValue("ETag")).isPresent();
            assertThat(h.headers().firstValue("Accept-Ranges")).contains("bytes");

            // RFC 9110 14.2: a server ignores Range on HEAD, an unsatisfiable one too
            for (String range : List.of("bytes=-100", "bytes=" + LEN + "-")) {
                HttpResponse<byte[]> hr = head(via, onB, range);
                assertThat(hr.statusCode()).as(range).isEqualTo(200);
                assertThat(hr.body()).isEmpty();
                assertThat(hr.headers().firstValue("Content-Length")).contains(Integer.toString(LEN));
                assertThat(hr.headers().firstValue("Content-Range")).isEmpty();
            }

            HttpResponse<byte[]> h404 = head(via, "never-written", null);
            assertThat(h404.statusCode()).isEqualTo(404);
            assertThat(h404.headers().firstValue("Content-Length"))
                    .isEqualTo(get(via, "never-written", null).headers().firstValue("Content-Length")).isPresent();
        }
    }

    @Test
    void etagIsTheCopyAndOriginVersionAndChangesWithAnUpdate() throws Exception {
        String id = idOwnedBy(b, "etag-");
        client.put(id, bytes(500, 10), null).get();
        awaitValue(b, id, bytes(500, 10));
        LobStore owner = b.tablespaces().get(Nodes.partitionOf(b, id)).orElseThrow();
        long v1 = owner.current(id).orElseThrow().originVersion(); // the version, unless compaction moved the value since
        String e1 = "\"" + owner.copyId() + "." + v1 + "\"";
        assertThat(get(b, id, null).headers().firstValue("ETag")).contains(e1);
        assertThat(get(a, id, null).headers().firstValue("ETag")).contains(e1);

        byte[] updated = bytes(700, 11);
        client.put(id, updated, null).get();
        awaitValue(a, id, updated);
        long v2 = owner.current(id).orElseThrow().originVersion();
        assertThat(v2).isGreaterThan(v1);
        assertThat(get(a, id, "bytes=0-0").headers().firstValue("ETag")).contains("\"" + owner.copyId() + "." + v2 + "\"");
    }

    @Test
    void unknownAndDeletedIdsAre404OnBothNodes() throws Exception {
        String gone = idOwnedBy(a, "gone-");
        client.put(gone, bytes(300, 5), null).get();
        awaitValue(b, gone, bytes(300, 5));
        client.delete(gone).get();
        await().atMost(Duration.ofSeconds(60)).until(() -> get(a, gone, null).statusCode() == 404);
        for (LobNode via : new LobNode[]{a, b}) {
            assertThat(get(via, gone, null).statusCode()).isEqualTo(404);
            assertThat(get(via, gone, "bytes=0-0").statusCode()).isEqualTo(404);
            assertThat(get(via, "never-written-" + via.httpPort(), null).statusCode()).isEqualTo(404);
        }
    }

    @Test
    void emptyValueSatisfiesOnlyASuffixRange() throws Exception {
        String id = idOwnedBy(a, "empty-");
        client.put(id, new byte[0], null).get();
        awaitValue(b, id, new byte[0]);
        for (LobNode via : new LobNode[]{a, b}) {
            HttpResponse<byte[]> whole = get(via, id, null);
            assertThat(whole.statusCode()).isEqualTo(200);
            assertThat(whole.headers().firstValue("Content-Length")).contains("0");
            assertUnsatisfiable(get(via, id, "bytes=0-0"), 0);
            // RFC 9110 §14.1.2: a non-zero suffix is satisfiable on an empty value; it is all of it, which only a 200 can say
            HttpResponse<byte[]> suffix = get(via, id, "bytes=-5");
            assertThat(suffix.statusCode()).isEqualTo(200);
            assertThat(suffix.body()).isEmpty();
        }
        // the CLI takes that 200 for the range it asked, not for a range the node ignored
        Path out = dir.resolve("empty-suffix.bin");
        assertThat(LobStreamCli.commandLine().execute("get", id, "--range", "-5", "-o", out.toString(), "--node",
                "http://127.0.0.1:" + b.httpPort())).isEqualTo(CommandLine.ExitCode.OK);
        assertThat(out).isEmptyFile();
    }

    /** A put's content type and metadata come back from both nodes, for a value in one record and one in chunks. */
    @Test
    void contentTypeAndMetadataAreServedByBothNodes() throws Exception {
        String small = idOwnedBy(a, "typed-");
        String big = idOwnedBy(b, "typed-chunks-");
        byte[] smallValue = bytes(LEN, 7);
        byte[] bigValue = bytes(600 << 10, 8); // over lob.chunk.size: an upload of two chunks
        client.put(small, smallValue, "image/png", Map.of("owner", "ann", "camera", "x-100")).get();
        client.put(big, bigValue, "application/pdf", Map.of("pages", "12")).get();
        awaitValue(a, small, smallValue);
        awaitValue(b, big, bigValue);
        for (LobNode via : new LobNode[]{a, b}) {
            for (HttpResponse<byte[]> r : List.of(get(via, small, null), head(via, small, null))) {
                assertThat(r.headers().firstValue("Content-Type")).contains("image/png");
                assertThat(r.headers().firstValue("X-LobStream-Meta-owner")).contains("ann");
                assertThat(r.headers().firstValue("X-LobStream-Meta-camera")).contains("x-100");
            }
            HttpResponse<byte[]> chunked = get(via, big, "bytes=0-9");
            assertThat(chunked.statusCode()).isEqualTo(206);
            assertThat(chunked.headers().firstValue("Content-Type")).contains("application/pdf");
            assertThat(chunked.headers().firstValue("X-LobStream-Meta-pages")).contains("12");
            assertThat(get(via, onA, null).headers().firstValue("Content-Type")).contains("application/octet-stream");
        }
        assertThatThrownBy(() -> client.put(small, smallValue, "text/plain\r\nSet-Cookie: x", Map.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("content type");
    }

    /**
     * Slow readers of large values hold at most 28 of a node's 32 HTTP threads: the rest answer /status at once. On b, which
     * cuts a stalled response after the default 60 s, not a's 3 s.
     */
    @Test
    void slowReadersLeaveThreadsForStatus() throws Exception {
        String big = idOwnedBy(b, "slow-");
        byte[] value = bytes(8 << 20, 11);
        client.put(big, value, null).get();
        awaitValue(b, big, value);
        List<Socket> readers = new ArrayList<>();
        try {
            for (int i = 0; i < 28; i++) { // each asks for the value and reads nothing: its thread blocks in the write
                Socket s = new Socket();
                s.setReceiveBufferSize(4096);
                s.connect(new java.net.InetSocketAddress("127.0.0.1", b.httpPort()));
                s.getOutputStream().write(("GET /lobs/" + big + " HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                readers.add(s);
            }
            // well within b's 60 s stall timeout, which would start cutting the readers
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                HttpResponse<byte[]> more = get(b, big, "bytes=0-0");
                assertThat(more.statusCode()).isEqualTo(503);
                assertThat(more.headers().firstValue("Retry-After")).contains("1");
            });
            HttpResponse<String> status = Nodes.HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + b.httpPort() + "/status"))
                    .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(status.statusCode()).isEqualTo(200);
        } finally {
            for (Socket s : readers) {
                s.close();
            }
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> get(b, big, "bytes=0-0").statusCode() == 206);
    }

    /** A read that fails before its status line is answered, with why: a corrupt page by its number. */
    @Test
    void aCorruptRootPageIsA500NamingItsPageOnBothNodes() throws Exception {
        String id = idOwnedBy(a, "corrupt-");
        byte[] v = bytes(LEN, 3);
        client.put(id, v, null).get();
        awaitValue(a, id, v);
        long root = ownerStore(id).current(id).orElseThrow().rootPage();
        whilePageCorrupt(id, root, () -> {
            for (LobNode via : new LobNode[]{a, b}) {
                HttpResponse<byte[]> r = get(via, id, null);
                assertThat(r.statusCode()).as("via " + via.httpPort()).isEqualTo(500);
                // page numbers are per tablespace: named with it
                assertThat(new String(r.body(), StandardCharsets.UTF_8)).contains("p-" + Nodes.partitionOf(a, id) + ": page " + root);
                assertThat(r.headers().firstValue("X-LobStream-Node")).as("a failure's answer is the node's too").isPresent();
            }
        });
        awaitValue(b, id, v);
    }

    /**
     * A read that fails after its status line went out (a corrupt data page mid-value) can only cut
     * the body short: the connection must close at once, directly and through the proxy, so the
     * client sees fewer bytes than promised. The connection used to stay open, and a client without
     * a timeout of its own on the body (HttpClient's, curl's by default) waited for the rest for ever.
     */
    @Test
    void aCorruptDataPageCutsTheBodyShortOnBothNodes() throws Exception {
        String id = idOwnedBy(a, "corrupt-data-");
        byte[] v = bytes(300_000, 4);
        client.put(id, v, null).get();
        awaitValue(a, id, v);
        VersionEntry entry = ownerStore(id).current(id).orElseThrow();
        long last = entry.extents().get(entry.extents().size() - 1).endPage() - 1; // a data page, not the root
        assertThat(last).isNotEqualTo(entry.rootPage());
        ListAppender<ILoggingEvent> said = new ListAppender<>();
        said.start();
        Logger serverLog = (Logger) LoggerFactory.getLogger(LobHttpServer.class);
        serverLog.addAppender(said);
        try {
            whilePageCorrupt(id, last, () -> {
                for (LobNode via : new LobNode[]{a, b}) {
                    // bounded here: HttpClient's request timeout ends at the response's headers, and the body would be
                    // waited for without end
                    var answer = Nodes.HTTP.sendAsync(HttpRequest.newBuilder(Nodes.uri(via, id)).build(),
                            HttpResponse.BodyHandlers.ofByteArray());
                    assertThatThrownBy(() -> answer.get(20, TimeUnit.SECONDS))
                            .as("via " + via.httpPort())
                            .isInstanceOf(ExecutionException.class)
                            .hasCauseInstanceOf(IOException.class);
                }
            });
        } finally {
            serverLog.detachAppender(said);
        }
        // damage on disk, not a client gone: an error, naming the tablespace and the page
        assertThat(said.list).filteredOn(e -> e.getLevel() == Level.ERROR)
                .anyMatch(e -> e.getFormattedMessage().contains("p-" + Nodes.partitionOf(a, id) + ": page " + last));
        awaitValue(b, id, v);
    }

    private LobStore ownerStore(String id) {
        return a.tablespaces().get(Nodes.partitionOf(a, id)).orElseThrow();
    }

    private interface Check {
        void run() throws Exception;
    }

    /** Runs {@code check} with 16 bytes in the middle of {@code page} of {@code id}'s tablespace flipped, then mends them. */
    private void whilePageCorrupt(String id, long page, Check check) throws Exception {
        LobStore store = ownerStore(id);
        long at = page * store.config().pageSize() + store.config().pageSize() / 2;
        ByteBuffer original = ByteBuffer.allocate(16);
        try (FileChannel pages = FileChannel.open(store.directory().resolve(TablespaceDirs.PAGES), StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            pages.read(original, at);
            byte[] flipped = original.array().clone();
            for (int i = 0; i < flipped.length; i++) {
                flipped[i] ^= (byte) 0xFF;
            }
            pages.write(ByteBuffer.wrap(flipped), at);
            try {
                check.run();
            } finally {
                pages.write(original.flip(), at); // the replay test compares every value with the node's
            }
        }
    }

    @Test
    void theOtherNodeSaysWhoServedIt() throws Exception {
        HttpResponse<byte[]> proxied = get(b, onA, null);
        assertThat(proxied.statusCode()).isEqualTo(200);
        assertThat(proxied.body()).isEqualTo(valueA);
        assertThat(proxied.headers().firstValue("X-LobStream-Served-By")).contains("127.0.0.1:" + a.httpPort());
        assertThat(get(a, onA, null).headers().firstValue("X-LobStream-Served-By")).isEmpty();
        assertThat(proxied.headers().firstValue("X-LobStream-Node")).as("the node that answered").contains("127.0.0.1:" + b.httpPort());
        assertThat(get(a, "never-written", null).headers().firstValue("X-LobStream-Node")).as("on a 404 too")
                .contains("127.0.0.1:" + a.httpPort());
        HttpResponse<String> root = Nodes.HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + a.httpPort() + "/")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(root.statusCode()).isEqualTo(404);
        assertThat(root.body()).contains("a LobStream node answers /lobs/{id}, /status, /fsck and /metrics");
        assertThat(root.headers().firstValue("X-LobStream-Node")).as("not a LOB's 404: a --node with a wrong path is said to be no node")
                .isEmpty();
    }

    /**
     * A client that stops reading a large value: the node closes its connection after lob.http.stall.timeout.ms, where it
     * held a thread, and one of its value reads, for as long as the client kept the connection open. The client finds
     * the body cut short; the node serves the next read.
     */
    @Test
    void aClientThatStopsReadingIsCutOff() throws Exception {
        String id = idOwnedBy(a, "stalled-");
        byte[] value = bytes(16 << 20, 41);
        client.put(id, value, null).applied(Duration.ofSeconds(60)).get();
        double before = stalled(a);
        try (Socket socket = new Socket()) {
            socket.setReceiveBufferSize(8192); // before connecting: a small window, so the node's writes block soon
            socket.setSoTimeout(SOCKET_READ_TIMEOUT_MS);
            socket.connect(new InetSocketAddress("127.0.0.1", a.httpPort()));
            socket.getOutputStream().write(("GET /lobs/" + id + " HTTP/1.1\r\nHost: test\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            await().atMost(Duration.ofSeconds(60)).until(() -> stalled(a) > before); // read nothing meanwhile
            long got = socket.getInputStream().transferTo(java.io.OutputStream.nullOutputStream()); // to the close
            assertThat(got).as("headers and the bytes buffered before the node stopped").isLessThan(value.length);
        }
        assertThat(get(a, id, null).body()).isEqualTo(value);
    }

    private static double stalled(LobNode node) {
        var c = node.meters().find("lob_http_stalled_responses").counter();
        return c == null ? 0 : c.count();
    }

    /**
     * The CLI's write commands: each returns once the writer has committed past its command, and
     * the node that does not own the LOB then serves the result (read-your-writes). Commands that
     * change nothing or are dead-lettered return too (they used to wait out the whole --timeout),
     * and no node is needed to wait: only to print the new version.
     */
    @Test
    void writeCommandsWaitForTheOwningWriterThroughTheOtherNode() throws Exception {
        String id = idOwnedBy(b, "cli-");
        byte[] value = bytes(3000, 21);
        Path file = dir.resolve("cli-value");
        Files.write(file, value);
        String viaA = "http://127.0.0.1:" + a.httpPort();

        Cli put = cli("put", id, file.toString(), "--node", viaA);
        assertThat(put.exit).as(put.err).isZero();
        assertThat(put.err).contains(id + ": applied, ETag \"");
        assertThat(get(b, id, null).body()).as("readable as soon as put returns").isEqualTo(value);
        // watching a writer group that never commits: not applied within --timeout is exit 3, never "applied" (10 s: a shorter
        // one bounds the broker check too, whose new admin client a loaded CI machine may take over 5 s to start: exit 1)
        Cli unwatched = clusterCommand(List.of("put", id + "-unwatched", file.toString(), "--timeout", "10s",
                "-c", LobStreamConfig.APPLICATION_ID.name() + "=no-such-writer"));
        assertThat(unwatched.exit).as(unwatched.err).isEqualTo(3);
        assertThat(unwatched.err).contains(id + "-unwatched: not applied after", "no-such-writer");

        byte[] tail = bytes(100, 22);
        Path tailFile = dir.resolve("cli-tail");
        Files.write(tailFile, tail);
        for (int run = 0; run < 2; run++) { // run again, as after a timeout: with its idempotency key, applied once
            Cli append = cli("append", id, tailFile.toString(), "--idempotency-key", "job-" + id, "--node", viaA);
            assertThat(append.exit).as(append.err).isZero();
        }
        byte[] appended = java.util.Arrays.copyOf(value, value.length + tail.length);
        System.arraycopy(tail, 0, appended, value.length, tail.length);
        assertThat(get(b, id, null).body()).isEqualTo(appended);
        Path otherTail = Files.write(dir.resolve("cli-tail-2"), bytes(100, 23));
        Cli reusedKey = cli("append", id, otherTail.toString(), "--idempotency-key", "job-" + id, "--node", viaA);
        assertThat(reusedKey.exit).as(reusedKey.err).isEqualTo(4);
        assertThat(reusedKey.err).contains("id-conflict", id + ": its --idempotency-key was used before for another write");
        assertThat(get(b, id, null).body()).isEqualTo(appended);
        Cli emptyKey = cli("append", id, tailFile.toString(), "--idempotency-key", "");
        assertThat(emptyKey.exit).as(emptyKey.err).isEqualTo(2);

        Cli truncate = cli("truncate", id, "--length", "999999", "--node", viaA);
        assertThat(truncate.exit).as(truncate.err).isEqualTo(4);
        assertThat(truncate.err).contains("dead-lettered", "out-of-range");

        Cli deleteNothing = cli("delete", "never-" + id, "--node", viaA);
        assertThat(deleteNothing.exit).as(deleteNothing.err).isZero();
        assertThat(deleteNothing.err).contains("never-" + id + ": applied, deleted");

        Cli delete = cli("delete", id, "--node", viaA);
        assertThat(delete.exit).as(delete.err).isZero();
        assertThat(delete.err).contains(id + ": applied, deleted");
        assertThat(get(a, id, null).statusCode()).isEqualTo(404);

        int closed = EmbeddedKafka.freePort();
        Cli noNode = cli("put", id, file.toString(), "--node", "http://127.0.0.1:" + closed);
        assertThat(noNode.exit).as(noNode.err).isZero();
        assertThat(noNode.err).contains(id + ": applied (no ETag from http://127.0.0.1:" + closed + ": no node answers");
        assertThat(get(a, id, null).body()).isEqualTo(value);
    }

    /**
     * {@code replay --verify} through the node that does not own the partition: a replay stopped
     * half way left its staging directory, which this one removes; the tablespace appears only
     * once it is whole. A replay while another holds the partition's lock is refused.
     */
    @Test
    void replayReplacesWhatAStoppedReplayLeftAndVerifiesThroughTheOtherNode() throws Exception {
        int partition = Nodes.partitionOf(b, onB);
        Path replayDir = dir.resolve("replay");
        Path tablespace = TablespaceDirs.partitionDir(replayDir, partition);
        Path leftover = TablespaceDirs.replayStaging(tablespace);
        Files.createDirectories(leftover);
        Files.write(leftover.resolve("lob.pages"), new byte[4096]);
        List<String> replay = List.of("replay", "--partition", Integer.toString(partition),
                "--data-dir", replayDir.toString(), "--verify", "--node", "http://127.0.0.1:" + a.httpPort());

        Cli notHttp = clusterCommand(List.of("replay", "--partition", Integer.toString(partition),
                "--data-dir", replayDir.toString(), "--verify", "--node", "ftp://127.0.0.1:" + a.httpPort()));
        assertThat(notHttp.exit).as(notHttp.err).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(notHttp.err).contains("is not a node's HTTP URL");
        assertThat(leftover).as("refused before the replay began").exists();

        try (FileChannel lockFile = FileChannel.open(TablespaceDirs.replayLock(tablespace),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock held = lockFile.lock()) {
            Cli refused = clusterCommand(replay);
            // a run-time condition, not a bad argument: the same command runs once that replay ends
            assertThat(refused.exit).as(refused.err).isEqualTo(CommandLine.ExitCode.SOFTWARE);
            assertThat(refused.err).contains("another replay of partition " + partition);
        }
        assertThat(leftover).as("left for the replay that holds the lock").exists();

        Cli replayed = clusterCommand(replay);
        assertThat(replayed.exit).as(replayed.err).isZero();
        // the count compared with the owner's (b), which node a forwarded the reads to: a does not hold the partition
        assertThat(replayed.err).doesNotContain("not compared").contains(": 0 differences");
        assertThat(leftover).doesNotExist();
        assertThat(TablespaceDirs.partitions(replayDir)).containsExactly(partition);

        Cli again = clusterCommand(replay);
        assertThat(again.exit).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(again.err).contains(tablespace + " exists");
    }

    /**
     * A replay that differs from the node is exit 1, naming the difference: here one that refuses the partition's 10,000-byte
     * value as too large, which the node's writer applied. A verify that always said "equal" would pass the test above. It
     * says why too: the node's copy was judged by another lob.value.max.bytes (its {@code judged_by} in /status).
     */
    @Test
    void replayVerifyReportsAValueTheNodeHasAndTheReplayDoesNot() {
        int partition = Nodes.partitionOf(b, onB);
        Cli differs = clusterCommand(List.of("replay", "--partition", Integer.toString(partition),
                "--data-dir", dir.resolve("replay-differs").toString(), "--verify", "--node", "http://127.0.0.1:" + b.httpPort(),
                "-c", LobStreamConfig.VALUE_MAX_BYTES.name() + "=1000"));
        assertThat(differs.exit).as(differs.err).isEqualTo(1);
        assertThat(differs.err).containsPattern("verified \\d+ values against .*: [1-9]\\d* differences")
                .containsPattern("DIFFERS the count of live LOBs: replayed \\d+, node \\d+")
                .contains("NOT COMPARABLE lob.value.max.bytes is 1000 here and was " + LobStreamConfig.VALUE_MAX_BYTES.defaultValue()
                        + " for the node's copy").doesNotContain("NOT COMPARABLE the node applied");
    }

    /**
     * Each value is compared, not only the count: a node whose {@code /status} is b's (the same partition, offsets and
     * settings) but whose values are other bytes is a difference for every value, each named. The test above passes on
     * the count alone; a verify that compared the replay with itself would pass it.
     */
    @Test
    void replayVerifyNamesEachValueWhoseBytesDiffer() throws Exception {
        int partition = Nodes.partitionOf(b, onB);
        HttpServer otherBytes = HttpServers.create(new InetSocketAddress("127.0.0.1", 0), 0);
        otherBytes.createContext("/status", exchange -> {
            byte[] status;
            try {
                status = Nodes.HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + b.httpPort() + "/status")).build(),
                        HttpResponse.BodyHandlers.ofByteArray()).body();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            }
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.getResponseHeaders().set(LobHttpServer.NODE, "other-bytes");
            exchange.sendResponseHeaders(200, status.length);
            exchange.getResponseBody().write(status);
            exchange.close();
        });
        otherBytes.createContext("/lobs/", exchange -> {
            byte[] body = "not the value".getBytes(StandardCharsets.US_ASCII);
            exchange.getResponseHeaders().set(LobHttpServer.NODE, "other-bytes");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        otherBytes.start();
        try {
            Cli differs = clusterCommand(List.of("replay", "--partition", Integer.toString(partition),
                    "--data-dir", dir.resolve("replay-other-bytes").toString(), "--verify",
                    "--node", "http://127.0.0.1:" + otherBytes.getAddress().getPort()));
            assertThat(differs.exit).as(differs.err).isEqualTo(1);
            assertThat(differs.err).contains("DIFFERS " + onB + ": replayed ")
                    .containsPattern("verified (\\d+) values against .*: \\1 differences")
                    .doesNotContain("DIFFERS the count").doesNotContain("NOT COMPARABLE");
        } finally {
            otherBytes.stop(0);
        }
    }

    record Cli(int exit, String err) {
    }

    /** A write command against the cluster, as the CLI runs it, waiting up to 60 s. */
    static Cli cli(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--timeout", "60s"));
        return clusterCommand(all);
    }

    static Cli clusterCommand(List<String> args) {
        StringWriter err = new StringWriter();
        CommandLine cmd = LobStreamCli.commandLine().setErr(new PrintWriter(err, true));
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of("--bootstrap", cluster.bootstrap(), "--registry", cluster.registryUrl()));
        int exit = cmd.execute(all.toArray(String[]::new));
        return new Cli(exit, err.toString());
    }
}
