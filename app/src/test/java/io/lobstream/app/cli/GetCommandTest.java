package io.lobstream.app.cli;

import com.sun.net.httpserver.HttpServer;
import io.lobstream.ingest.http.HttpServers;
import io.lobstream.ingest.http.LobHttpServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code get} refuses a range it cannot send before it asks any node, and refuses a value the node
 * cut short (a stand-in node here: a JDK HTTP server that sends half of what it announced).
 */
class GetCommandTest {
    private final CliRun cli = new CliRun();

    @TempDir
    Path dir;

    private int get(String id, String... options) {
        String[] all = new String[options.length + 2];
        all[0] = "get";
        all[1] = id;
        System.arraycopy(options, 0, all, 2, options.length);
        return cli.run(all);
    }

    @Test
    void aRangeThatEndsBeforeItStartsIsAUsageError() {
        assertThat(get("doc-1", "--range", "5-2")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--range 5-2: A must not be past B").contains("Usage: lobstream get");
    }

    @Test
    void aRangeThatIsNotOneRangeIsAUsageError() {
        assertThat(get("doc-1", "--range", "0-1,5-9")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--range must be A-B, A- or -N (one range)");
    }

    @Test
    void aValueCutShortIsAnErrorAndLeavesNoFile() throws IOException {
        Path out = dir.resolve("doc-1.bin");
        assertThat(getTo(out, servingHalfOf(1000))).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(cli.err()).contains("ended after 500 of 1000 bytes");
        assertThat(out).doesNotExist();
        assertThat(partFiles()).isEmpty();
    }

    @Test
    void aWholeValueIsWritten() throws IOException {
        Path out = dir.resolve("doc-1.bin");
        assertThat(getTo(out, servingWhole(1000))).isZero();
        assertThat(Files.size(out)).isEqualTo(1000);
    }

    /** A file kept private stays so (the part file that replaces it was made under the umask), and one open to all too. */
    @Test
    void aFileReplacedKeepsItsPermissions() throws IOException {
        for (String mode : new String[] {"rw-------", "rw-rw-rw-", "r--r-----", "rw----r--"}) {
            Path out = Files.write(dir.resolve("private.bin"), new byte[]{1});
            Files.setPosixFilePermissions(out, PosixFilePermissions.fromString(mode));
            assertThat(getTo(out, servingWhole(1000))).isZero();
            assertThat(Files.size(out)).isEqualTo(1000);
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(out))).as(mode).isEqualTo(mode);
            assertThat(partFiles()).isEmpty();
            Files.delete(out);
        }
    }

    /** A file whose group may read it keeps that group: the creator's (another) would otherwise read the next value. */
    @Test
    void aFileReplacedKeepsItsGroup() throws IOException {
        Path out = Files.write(dir.resolve("shared.bin"), new byte[]{1});
        PosixFileAttributeView view = Files.getFileAttributeView(out, PosixFileAttributeView.class);
        GroupPrincipal mine = view.readAttributes().group();
        GroupPrincipal other = null;
        for (String name : new String[] {"daemon", "bin", "sys", "adm", "nogroup"}) {
            try {
                GroupPrincipal g = out.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByGroupName(name);
                view.setGroup(g); // only a group this user may give: root any, others their own
                if (!g.equals(mine)) {
                    other = g;
                    break;
                }
            } catch (IOException e) {
                // not a group here, or not one this user may give
            }
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(other != null, "this user can give a file no group but its own");
        Files.setPosixFilePermissions(out, PosixFilePermissions.fromString("rw-r-----"));
        assertThat(getTo(out, servingWhole(1000))).isZero();
        assertThat(Files.readAttributes(out, PosixFileAttributes.class).group()).isEqualTo(other);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(out))).isEqualTo("rw-r-----");
    }

    /** A FILE.part already there (an earlier release's, or a link planted to another file) is neither written nor followed. */
    @Test
    void anOldPartFileIsLeftAlone() throws IOException {
        Path other = Files.write(dir.resolve("other.bin"), new byte[]{7});
        Path planted = Files.createSymbolicLink(dir.resolve("doc-1.bin.part"), other.getFileName());
        assertThat(getTo(dir.resolve("doc-1.bin"), servingWhole(1000))).isZero();
        assertThat(other).hasBinaryContent(new byte[]{7});
        assertThat(Files.isSymbolicLink(planted)).isTrue();
        assertThat(Files.size(dir.resolve("doc-1.bin"))).isEqualTo(1000);
        assertThat(partFiles()).containsExactly(planted);
    }

    @Test
    void theLinksToThisProcesssDescriptorsAreKnown() {
        assertThat(GetCommand.descriptor(Path.of("/dev/stdout"))).isEqualTo(1);
        assertThat(GetCommand.descriptor(Path.of("/dev//stdout"))).isEqualTo(1);
        assertThat(GetCommand.descriptor(Path.of("/dev/stderr"))).isEqualTo(2);
        assertThat(GetCommand.descriptor(Path.of("/dev/fd/3"))).isEqualTo(3);
        assertThat(GetCommand.descriptor(Path.of("/proc/self/fd/1"))).isEqualTo(1);
        assertThat(GetCommand.descriptor(Path.of("/proc/" + ProcessHandle.current().pid() + "/fd/7"))).isEqualTo(7);
        assertThat(GetCommand.descriptor(Path.of("/proc/" + (ProcessHandle.current().pid() + 1) + "/fd/1"))).isEqualTo(-1);
        assertThat(GetCommand.descriptor(Path.of("/dev/shm/x"))).isEqualTo(-1);
    }

    /** A descriptor not open, or open to read only (as one of the JVM's own may be), is a bad -o, said before any node is asked. */
    @Test
    void aDescriptorThatCannotTakeTheValueIsAUsageError() {
        assertThat(get("doc-1", "-o", "/dev/fd/987654")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("descriptor 987654 is not open");
    }

    /** As {@code -o /dev/fd/3 3>>log}: what the descriptor's file held stays, the value comes after it (it was truncated). */
    @Test
    void aLinkToADescriptorIsAppendedTo() throws IOException {
        Path log = Files.write(dir.resolve("log"), new byte[]{1, 2, 3});
        try (java.io.FileOutputStream opened = new java.io.FileOutputStream(log.toFile(), true)) {
            Path fd = descriptorOf(log);
            assertThat(getTo(fd, servingWhole(1000))).isZero();
            assertThat(Files.size(log)).isEqualTo(1003);
            assertThat(Files.readAllBytes(log)).startsWith(1, 2, 3);
        }
    }

    /** The /proc/self/fd link of a descriptor this process holds open on {@code file}. */
    private static Path descriptorOf(Path file) throws IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    if (Files.readSymbolicLink(fd).equals(file.toRealPath())) { // the kernel's link names the real path
                        return fd;
                    }
                } catch (IOException gone) {
                    // a descriptor closed since the listing
                }
            }
        }
        throw new AssertionError("no descriptor open on " + file);
    }

    private java.util.List<Path> partFiles() throws IOException {
        try (var files = Files.list(dir)) {
            return files.filter(f -> f.getFileName().toString().endsWith(".part")).toList();
        }
    }

    /** {@code -o -} is standard output, as {@code put ID -} reads standard input: not a file named "-" in the working directory. */
    @Test
    void aDashIsStandardOutputNotAFile() throws IOException {
        assertThat(getTo(Path.of("-"), servingWhole(3))).isZero();
        assertThat(cli.err()).contains("doc-1: 3 bytes");
        assertThat(Path.of("-")).doesNotExist();
    }

    @Test
    void aLinkToAFileKeepsItsFileWholeOnFailureAndStaysALink() throws IOException {
        Path file = Files.write(dir.resolve("current-1.bin"), new byte[]{1, 2, 3});
        Path link = Files.createSymbolicLink(dir.resolve("current.bin"), file.getFileName());

        assertThat(getTo(link, servingHalfOf(1000))).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(file).hasBinaryContent(new byte[]{1, 2, 3});
        assertThat(partFiles()).isEmpty();

        assertThat(getTo(link, servingWhole(1000))).isZero();
        assertThat(Files.isSymbolicLink(link)).isTrue();
        assertThat(Files.size(file)).isEqualTo(1000);
    }

    @Test
    void aLinkToAFileNotThereYetGetsNoFileOnFailureAndAWholeOneAfter() throws IOException {
        Path link = Files.createSymbolicLink(dir.resolve("latest.bin"), Path.of("latest-2.bin"));
        Path file = dir.resolve("latest-2.bin");

        assertThat(getTo(link, servingHalfOf(1000))).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(file).doesNotExist();
        assertThat(partFiles()).isEmpty();

        assertThat(getTo(link, servingWhole(1000))).isZero();
        assertThat(Files.isSymbolicLink(link)).isTrue();
        assertThat(Files.size(file)).isEqualTo(1000);
    }

    /** As {@code -o /dev/stdout} into a pipe: a link to what is not a regular file is written through, not beside. */
    @Test
    void aLinkToAPipeIsWrittenThrough() throws Exception {
        Path fifo = dir.resolve("fifo");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
        Path link = Files.createSymbolicLink(dir.resolve("out"), fifo.getFileName());
        CompletableFuture<Integer> read = CompletableFuture.supplyAsync(() -> {
            try (InputStream in = Files.newInputStream(fifo)) {
                return in.readAllBytes().length;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        assertThat(getTo(link, servingWhole(1000))).isZero();
        assertThat(read.get(30, TimeUnit.SECONDS)).isEqualTo(1000);
        assertThat(partFiles()).isEmpty();
    }

    /** A bad -o is a bad argument, said before the node is asked: it was exit 1 after the request. */
    @Test
    void anOutputDirectoryThatIsNotThereOrADirectoryIsAUsageError() throws IOException {
        Path out = dir.resolve("no-such-dir").resolve("doc-1.bin");
        assertThat(getTo(out, servingWhole(10))).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("-o " + out + ": no directory " + dir.resolve("no-such-dir")).contains("Usage: lobstream get");
        assertThat(getTo(dir, servingWhole(10))).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("-o " + dir + " is a directory");
        Path file = java.nio.file.Files.writeString(dir.resolve("notes.txt"), "");
        assertThat(getTo(file.resolve("out"), servingWhole(10))).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains(file + " is not a directory");
    }

    /** A node started with {@code -c lob.http.port=N} (or a --command-config file saying so) is found with the same keys. */
    @Test
    void theNodesOwnPortKeyNamesItWithoutNode() throws IOException {
        Path out = dir.resolve("doc-1.bin");
        HttpServer node = servingWhole(7);
        try {
            assertThat(get("doc-1", "-o", out.toString(), "-c", "lob.http.port=" + node.getAddress().getPort())).isZero();
        } finally {
            node.stop(0);
        }
        assertThat(Files.size(out)).isEqualTo(7);
    }

    /** As every command that takes -c: a key no one reads is a usage error, not a setting silently lost. */
    @Test
    void aMisspeltKeyIsAUsageError() {
        assertThat(get("doc-1", "-c", "lob.htp.port=8091")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.htp.port");
    }

    /** {@code get doc-1 -o out [options]} from {@code node}, stopped afterwards. */
    private int getTo(Path out, HttpServer node, String... options) {
        try {
            String[] all = new String[options.length + 4];
            System.arraycopy(new String[]{"-o", out.toString(), "--node", "http://127.0.0.1:" + node.getAddress().getPort()}, 0, all, 0, 4);
            System.arraycopy(options, 0, all, 4, options.length);
            return get("doc-1", all);
        } finally {
            node.stop(0);
        }
    }

    private static HttpServer servingWhole(int length) throws IOException {
        HttpServer node = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        node.createContext("/lobs/", ex -> {
            ex.getResponseHeaders().add("ETag", "\"c.3\"");
            ex.getResponseHeaders().add(LobHttpServer.NODE, "test:1");
            ex.sendResponseHeaders(200, length);
            ex.getResponseBody().write(new byte[length]);
            ex.close();
        });
        node.start();
        return node;
    }

    /** Announces {@code length} bytes, sends half and closes the connection, as a node whose read fails mid-value. */
    private static HttpServer servingHalfOf(int length) throws IOException {
        HttpServer node = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        node.createContext("/lobs/", ex -> {
            ex.getResponseHeaders().add(LobHttpServer.NODE, "test:1");
            ex.sendResponseHeaders(200, length);
            ex.getResponseBody().write(new byte[length / 2]);
            ex.getResponseBody().flush();
            ex.close(); // fewer bytes than announced: the JDK server closes the connection
        });
        node.start();
        return node;
    }

    /** --node naming another server (the registry's port, say): its 404 is not taken for "no such LOB". */
    @Test
    void aServerThatIsNoNodeIsSaidToBeNone(@TempDir Path dir) throws Exception {
        HttpServer other = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        other.createContext("/", ex -> {
            try (ex) {
                ex.sendResponseHeaders(404, -1);
            }
        });
        other.start();
        assertThat(getTo(dir.resolve("out"), other)).isEqualTo(1);
        assertThat(cli.err()).contains("is not a LobStream node (it answered HTTP 404").doesNotContain("no such LOB");
    }

    /** A proxy in front of a node answers 502 of its own while the node restarts: said as such, not as "no node". */
    @Test
    void aProxysOwnErrorKeepsItsStatus(@TempDir Path dir) throws Exception {
        HttpServer proxy = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        proxy.createContext("/", ex -> {
            try (ex) {
                byte[] body = "Bad Gateway".getBytes(StandardCharsets.UTF_8);
                ex.sendResponseHeaders(502, body.length);
                ex.getResponseBody().write(body);
            }
        });
        proxy.start();
        assertThat(getTo(dir.resolve("out"), proxy)).isEqualTo(1);
        assertThat(cli.err()).contains("doc-1: HTTP 502 Bad Gateway").doesNotContain("not a LobStream node");
    }

    /** What the node's answer means for the exit status: 1 no such LOB, 2 a range it could not or did not serve. */
    @Test
    void aNodesAnswerGivesTheExitStatus(@TempDir Path dir) throws Exception {
        assertThat(getTo(dir.resolve("out"), answering(404, null))).isEqualTo(1);
        assertThat(cli.err()).contains("doc-1: no such LOB");
        assertThat(getTo(dir.resolve("out"), answering(416, "bytes */1000"), "--range", "5000-")).isEqualTo(2);
        assertThat(cli.err()).contains("doc-1: range 5000- not satisfiable (bytes */1000)");
        assertThat(getTo(dir.resolve("out"), servingWhole(1000), "--range", "0-9")).isEqualTo(2);
        assertThat(cli.err()).contains("doc-1: the node ignored --range 0-9 and sent the whole value");
        assertThat(dir.resolve("out")).as("nothing written of what was not asked").doesNotExist();
    }

    /** A 503 that says when (a partition under fsck, every read slot taken) is asked again, not an error. */
    @Test
    void aBusyNodeIsAskedAgainWhenItSays(@TempDir Path dir) throws Exception {
        askedAgainAfterA503(dir, true);
    }

    /** A 503 that does not say when (partitions being assigned, the node starting) is a rebalance: asked again each second. */
    @Test
    void aNodeInARebalanceIsAskedAgain(@TempDir Path dir) throws Exception {
        askedAgainAfterA503(dir, false);
    }

    private void askedAgainAfterA503(Path dir, boolean saysWhen) throws Exception {
        AtomicInteger asked = new AtomicInteger();
        HttpServer node = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        node.createContext("/lobs/", ex -> {
            try (ex) {
                ex.getResponseHeaders().add(LobHttpServer.NODE, "test:1");
                if (asked.incrementAndGet() == 1) {
                    if (saysWhen) {
                        ex.getResponseHeaders().add("Retry-After", "1");
                    }
                    ex.sendResponseHeaders(503, -1);
                } else {
                    ex.sendResponseHeaders(200, 10);
                    ex.getResponseBody().write(new byte[10]);
                }
            }
        });
        node.start();
        Path out = dir.resolve("out");
        assertThat(getTo(out, node)).as(cli.err()).isZero();
        assertThat(asked).hasValue(2);
        assertThat(out).hasSize(10);
    }

    /** A node that answers every value {@code status} with no body, and {@code contentRange} if given. */
    private static HttpServer answering(int status, String contentRange) throws IOException {
        HttpServer node = HttpServers.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        node.createContext("/lobs/", ex -> {
            try (ex) {
                ex.getResponseHeaders().add(LobHttpServer.NODE, "test:1");
                if (contentRange != null) {
                    ex.getResponseHeaders().add("Content-Range", contentRange);
                }
                ex.sendResponseHeaders(status, -1);
            }
        });
        node.start();
        return node;
    }

    @Test
    void digitsPastALongAreComparedAsNumbers() {
        assertThat(get("doc-1", "--range", "99999999999999999999-1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("A must not be past B");
    }
}
