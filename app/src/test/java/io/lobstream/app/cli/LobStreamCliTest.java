package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** What {@code ./lobstream} says when it is not given what it needs. */
class LobStreamCliTest {
    private final CliRun cli = new CliRun();

    @Test
    void noCommandIsAUsageError() {
        assertThat(cli.run()).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("a command is required").contains("Usage: lobstream");
    }

    /**
     * A second node on a data directory in use (here, a lock this JVM holds) is told so before the HTTP port the first
     * node holds too: told to move that port, it would have been refused for the directory only after.
     */
    @Test
    void aSecondNodeOnADataDirectoryInUseIsToldThatNotToMoveItsHttpPort(@TempDir Path dir) throws IOException {
        try (FileChannel held = FileChannel.open(dir.resolve("embedded.lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock lock = held.lock();
             ServerSocket http = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            assertThat(cli.run("node", "--data-dir", dir.toString(), "--http-port", String.valueOf(http.getLocalPort())))
                    .isEqualTo(CommandLine.ExitCode.SOFTWARE);
            assertThat(cli.err()).contains("is in use by another LobStream node").doesNotContain("cannot bind");
        }
    }

    /**
     * {@code replay} into the data directory of a node that runs (its node.in-use rewritten, here by a thread as the node
     * does) is refused before the broker is asked: a partition that came to the node meanwhile would fail the replay's
     * move into place at its end. Exit 1, as for another replay's lock: not a bad argument, the same command runs once the
     * node has stopped.
     */
    @Test
    void aReplayIntoARunningNodesDataDirectoryIsRefused(@TempDir Path dir) throws Exception {
        java.util.concurrent.ScheduledExecutorService node = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        java.util.concurrent.atomic.AtomicLong seq = new java.util.concurrent.atomic.AtomicLong();
        io.lobstream.store.tablespace.InUseFile.write(dir, "run", seq.incrementAndGet(), List.of(1)); // there before the replay looks
        try {
            node.scheduleWithFixedDelay(() -> {
                try {
                    io.lobstream.store.tablespace.InUseFile.write(dir, "run", seq.incrementAndGet(), List.of(1));
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, 200, 200, java.util.concurrent.TimeUnit.MILLISECONDS);
            assertThat(cli.run("replay", "--json", "--partition", "0", "--data-dir", dir.toString(), "--bootstrap", "127.0.0.1:1"))
                    .isEqualTo(CommandLine.ExitCode.SOFTWARE);
            assertThat(cli.err()).contains("lobstream replay: a node runs on " + dir, "choose another --data-dir")
                    .doesNotContain("Usage:", "broker"); // refused before the broker (not there) was asked
            assertThat(cli.out()).contains("\"error\":\"a node runs on");
        } finally {
            node.shutdownNow();
            node.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
        }
        assertThat(Files.exists(dir.resolve("tablespaces").resolve("p-0.replaying.lock"))).as("nothing made").isFalse();
    }

    /**
     * A JAAS line left unquoted splits into words, which picocli quotes back as arguments it could not take: in an
     * {@code @FILE}, whose reader takes {@code "} as a quote, a password comes apart from its key.
     */
    @Test
    void anArgumentNotTakenIsShownWithoutItsSecret(@TempDir Path dir) throws IOException {
        Path args = Files.writeString(dir.resolve("client.args"), "-c sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                + "required username=\"u\" password=\"hun,ter2\";\n");
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "@" + args)).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("'password=', '***'", "'username=', 'u'", "Usage: lobstream delete").doesNotContain("ter2");
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "password=\"hunter2\";", "basic.auth.user.info=u:hunter3"))
                .isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("'password=***'", "'basic.auth.user.info=***'").doesNotContain("hunter");
    }

    @Test
    void aMisspeltKeyIsAUsageErrorBeforeAnythingIsTried() {
        // no broker listens on port 1: the key is refused before anything connects
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "-c", "lob.writer.thread=4")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lobstream delete: unknown configuration key lob.writer.thread (./lobstream config lists them)");
    }

    /** Keys from a properties file, as Kafka's tools take a client.properties; -c wins over the file's. */
    @Test
    void aCommandConfigFileGivesKeysAndMinusCWinsOverIt(@TempDir Path dir) throws IOException {
        Path file = Files.writeString(dir.resolve("client.properties"), "# as for kafka-console-producer.sh\nlob.writer.thread = 4\n");
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "--command-config", file.toString()))
                .isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("unknown configuration key lob.writer.thread");
        assertThat(cli.run("node", "--bootstrap", "127.0.0.1:1", "--command-config", file.toString())).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("unknown configuration key lob.writer.thread");

        Files.writeString(file, "lob.chunk.size=big\n");
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "--command-config", file.toString(),
                "-c", "lob.chunk.size=65536", "-c", "lob.page.size=abc")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).as("-c's chunk size, not the file's").contains("lob.page.size").doesNotContain("lob.chunk.size");

        assertThat(cli.run("status", "--command-config", dir.resolve("none.properties").toString())).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("cannot read " + dir.resolve("none.properties") + ": no such file or directory")
                .contains("Usage: lobstream status");
        Path latin1 = Files.write(dir.resolve("latin1.properties"), new byte[] {'a', '=', (byte) 0xE9, '\n'}); // as Kafka's tools read
        assertThat(cli.run("status", "--command-config", latin1.toString())).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("cannot read " + latin1 + ": it is not UTF-8");
    }

    @Test
    void aMisspeltKeyStopsANodeOrADemoBeforeItStartsAnything() {
        assertThat(cli.run("node", "--bootstrap", "127.0.0.1:1", "-c", "lob.writer.thread=4")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("unknown configuration key lob.writer.thread");
        // no broker, registry or node is started for it: this returns at once
        assertThat(cli.run("demo", "-c", "lob.purge.prefetch.windw=4")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("unknown configuration key lob.purge.prefetch.windw");
        // nor for a key it sets itself, which it would drop without a word (and delete the temporary directory it ran in)
        assertThat(cli.run("demo", "-c", "lob.data.dir=/keep")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.data.dir is not taken: this command sets it itself (the data directory with --data-dir)");
        assertThat(cli.run("bench", "pipeline", "-c", "bootstrap.servers=elsewhere:9092")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("bootstrap.servers is not taken");
        assertThat(cli.run("demo", "-c", "apicurio.registry.url=http://elsewhere:8080/apis/registry/v2")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("apicurio.registry.url is not taken");
        assertThat(cli.run("demo", "-c", "lob.streams.producer.bootstrap.servers=elsewhere:9092")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.streams.producer.bootstrap.servers is not taken: this command sets the cluster itself");
        // nor for a value Kafka Streams would refuse as the writer starts, after the embedded broker had
        assertThat(cli.run("demo", "-c", "lob.streams.processing.guarantee=bogus")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.streams.processing.guarantee=bogus: ");
        assertThat(cli.run("node", "--bootstrap", "127.0.0.1:1", "-c", "lob.streams.linger.ms=abc")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.streams.linger.ms=abc: ");
        assertThat(cli.run("bench", "pipeline", "-c", "lob.streams.consumer.max.poll.records=0")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.streams.consumer.max.poll.records=0: ");
        // nor for values larger than a write may be: each would fail, the client refusing it
        assertThat(cli.run("demo", "--max-size", "2m", "-c", "lob.value.max.bytes=1000000")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--max-size 2097152 is over lob.value.max.bytes (1000000): the client would refuse writes that large");
    }

    @Test
    void anIdTheIndexCannotHoldIsAUsageError() {
        assertThat(cli.run("delete", "x".repeat(70_000), "--bootstrap", "127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("the LOB id of 70000 bytes: at most 65535");
        assertThat(cli.run("delete", "", "--bootstrap", "127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("the LOB id must not be empty");
    }

    @Test
    void aValueAKeyDoesNotTakeIsAUsageError() {
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "-c", "lob.chunk.size=big")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lobstream delete: ").contains("lob.chunk.size");
        // an engine key, which a client command does not use, is checked all the same, as README says
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "-c", "lob.page.size=abc")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.page.size");
        // a misspelt serializer class: refused before a broker starts or a topic is made (it was found only after both)
        assertThat(cli.run("node", "--bootstrap", "127.0.0.1:1", "--http-port", "0", "-c", "lob.value.serializer=com.example.Typo"))
                .isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.value.serializer=com.example.Typo: no such class");
    }

    /**
     * A --data-dir that is a file is a bad argument before anything starts (a node's embedded broker started first, and
     * the error said "already exists"; a purge worker only warned that no tablespace was there yet). A file problem
     * inside node's "failed to start" names only its path: the one-line error says what is wrong with it.
     */
    @Test
    void aDataDirectoryThatIsAFileIsNamedWithWhatIsWrong(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws IOException {
        java.nio.file.Path file = java.nio.file.Files.createFile(dir.resolve("not-a-dir"));
        for (String command : List.of("node", "cluster", "purge", "demo", "replay")) {
            List<String> args = new java.util.ArrayList<>(List.of(command, "--data-dir", file.toString()));
            if (command.equals("replay")) {
                args.addAll(List.of("--partition", "0", "--bootstrap", "127.0.0.1:1"));
            }
            assertThat(cli.run(args.toArray(String[]::new))).as(command).isEqualTo(CommandLine.ExitCode.USAGE);
            assertThat(cli.err()).contains("'" + file + "' is not a directory").contains("Usage: lobstream " + command);
        }
        assertThat(cli.run("bench", "pipeline", "--data-dir", file.toString())).isEqualTo(CommandLine.ExitCode.USAGE);
        java.nio.file.Path below = file.resolveSibling("node-data");
        java.nio.file.Files.writeString(below, "");
        assertThat(cli.run("node", "-c", "lob.data.dir=" + below, "--http-port", "0")).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(cli.err()).contains("lobstream node: ").contains("already exists: " + below);
    }

    @Test
    void aNodeThatIsNoUrlIsAUsageErrorBeforeAnythingIsSent() {
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "--node", "http://[bad")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("'http://[bad' is not a node's HTTP URL");
        assertThat(cli.run("get", "doc", "--node", "ftp://host:21")).isEqualTo(CommandLine.ExitCode.USAGE);
        // URI takes it: the HTTP client refused it only after the write had been sent
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "--node", "127.0.0.1:80800")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("'127.0.0.1:80800' is not a node's HTTP URL");
        assertThat(new NodeUrl().convert("127.0.0.1:8080")).isEqualTo("http://127.0.0.1:8080"); // as --bootstrap takes it
        assertThat(new NodeUrl().convert("https://node-1:8443/")).isEqualTo("https://node-1:8443/");
    }

    /** A command that fails with --json still ends with one JSON object on stdout's last line, for the script that reads it. */
    @Test
    void aFailedCommandWithJsonEndsWithAJsonError(@TempDir Path dir) throws IOException {
        assertThat(cli.run("replay", "--json", "--partition", "0", "--data-dir", dir.resolve("r").toString(), "--bootstrap", "127.0.0.1:1",
                "-c", "default.api.timeout.ms=2000", "-c", "request.timeout.ms=1000")).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        List<String> lines = cli.out().lines().toList();
        com.fasterxml.jackson.databind.JsonNode last = new com.fasterxml.jackson.databind.ObjectMapper().readTree(lines.get(lines.size() - 1));
        assertThat(last.path("exit_code").asInt()).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(last.path("error").asText()).isNotBlank();
        assertThat(cli.err()).contains("lobstream replay: " + last.path("error").asText());
        // (--verify with no node answering fails at once; a broker not answering waits BrokerCheck.WAIT, 10 s, as above)
        assertThat(cli.run("replay", "--verify", "--node", "http://127.0.0.1:1", "--partition", "0", "--data-dir",
                dir.resolve("r2").toString(), "--bootstrap", "127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(cli.out()).as("nothing on stdout without --json").isEmpty();
        // status says why itself, and returns 1
        assertThat(cli.run("status", "--json", "--node", "http://127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        lines = cli.out().lines().toList();
        assertThat(new com.fasterxml.jackson.databind.ObjectMapper().readTree(lines.get(lines.size() - 1)).path("exit_code").asInt())
                .isEqualTo(CommandLine.ExitCode.SOFTWARE);
        // a bad argument: usage on stderr alone
        assertThat(cli.run("replay", "--json", "--partition", "0", "--data-dir", dir.resolve("r3").toString(), "--bootstrap", "127.0.0.1:1",
                "-c", "linger.ms=abc")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.out()).isEmpty();
    }

    /** An Error (RocksDB's native library that will not load) is no Exception picocli handles: still one line, and one JSON object. */
    @Test
    void anErrorWithJsonEndsWithAJsonErrorToo() throws IOException {
        @CommandLine.Command(name = "boom")
        class Boom implements Runnable {
            @CommandLine.Option(names = "--json")
            boolean json;

            @Override
            public void run() {
                throw new UnsatisfiedLinkError("no rocksdbjni in java.library.path");
            }
        }
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        CommandLine cli = LobStreamCli.commandLine().addSubcommand(new Boom());
        cli.setOut(new java.io.PrintWriter(out, true)).setErr(new java.io.PrintWriter(err, true));
        assertThat(LobStreamCli.execute(cli, "boom", "--json")).isEqualTo(CommandLine.ExitCode.SOFTWARE);
        assertThat(err.toString()).contains("lobstream: java.lang.UnsatisfiedLinkError: no rocksdbjni");
        com.fasterxml.jackson.databind.JsonNode last = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.toString().strip());
        assertThat(last.path("error").asText()).isEqualTo("java.lang.UnsatisfiedLinkError: no rocksdbjni in java.library.path");
        assertThat(last.path("exit_code").asInt()).isEqualTo(CommandLine.ExitCode.SOFTWARE);
    }

    @Test
    void benchWithoutABenchmarkIsAUsageError() {
        assertThat(cli.run("bench")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("a benchmark is required").contains("Usage: lobstream bench");
    }

    @Test
    void aDeadLetterKindRedriveDoesNotKnowIsAUsageError() {
        assertThat(cli.run("redrive", "--kind", "too_large", "--bootstrap", "127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--kind too_large: not a kind of dead letter; one of undecodable, invalid, too-large");
    }

    /** The HTTP port is checked before an embedded broker and registry start (seconds), and the message names its option. */
    @Test
    void aNodeWhoseHttpPortIsTakenSaysSoBeforeItStartsAnything(@TempDir Path dir) throws IOException {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            // a data directory of its own: were the check to regress, the node would not start in the module's directory
            assertThat(cli.run("node", "--data-dir", dir.toString(), "--http-port", Integer.toString(taken.getLocalPort())))
                    .isEqualTo(CommandLine.ExitCode.SOFTWARE);
        }
        assertThat(cli.err()).contains("lobstream node: failed to start: the HTTP API cannot bind 127.0.0.1:")
                .contains("lob.http.port (node --http-port)");
    }

    /** Arguments that could never work are refused before a broker is asked or anything starts, naming the option. */
    @Test
    void argumentsThatCannotWorkAreUsageErrorsBeforeAnythingStarts(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        // sent, and then "not applied after 0s" (exit 3): a retry would apply it twice
        assertThat(cli.run("truncate", "doc", "--length", "0", "--bootstrap", "127.0.0.1:1", "--timeout", "0s"))
                .isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--timeout under a millisecond: no write is applied at once");
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "--timeout", "500us")).isEqualTo(CommandLine.ExitCode.USAGE);
        // found once a broker answered, as "standard input: the input runs past 0 bytes"
        assertThat(cli.run("write", "doc", "--offset", "2000", "-", "--bootstrap", "127.0.0.1:1", "-c", "lob.value.max.bytes=1000"))
                .isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--offset 2000 is past lob.value.max.bytes (1000)");
        assertThat(cli.run("get", "", "--node", "http://127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("the LOB id must not be empty");
        // found only as the topics were made, once the embedded broker and registry had started
        assertThat(cli.run("demo", "--partitions", "20000")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--partitions 20000: must be between 1 and 10000");
        assertThat(cli.run("bench", "history", "--partitions", "0")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--partitions 0: must be between 1 and 10000");
        assertThat(cli.run("bench", "history", "--rows", "0")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("Usage: lobstream bench history").contains("need --rows");
        assertThat(cli.run("demo", "--duration", "0s")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("and a positive --duration");
        // was an IllegalArgumentException from the run: exit 1, no usage
        assertThat(cli.run("bench", "purge", "--prefetch", "maybe", "--data-dir", dir.resolve("bp").toString()))
                .isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--prefetch: expected on or off, got 'maybe'").contains("Usage: lobstream bench purge");
        assertThat(cli.run("purge", "--worker-id", "", "--bootstrap", "127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--worker-id must not be empty");
        // a typo failed only once the broker had been asked and the clients made (exit 1, no usage), or was ignored
        assertThat(cli.run("purge", "--metrics-port", "0", "--metrics-host", "no-such-host.invalid", "--bootstrap", "127.0.0.1:1"))
                .isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--metrics-host no-such-host.invalid: not an address");
        assertThat(cli.run("purge", "--metrics-port", "0", "--metrics-host", "", "--bootstrap", "127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--metrics-host must not be empty");
        assertThat(cli.run("purge", "--metrics-host", "127.0.0.1", "--bootstrap", "127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--metrics-host needs --metrics-port");
        assertThat(cli.run("bench", "purge", "--backlog", "-5", "--data-dir", dir.resolve("bp").toString())).isEqualTo(CommandLine.ExitCode.USAGE);
        // Kafka said so only as it made a client (exit 1), a node's after its embedded broker had started
        assertThat(cli.run("delete", "doc", "--bootstrap", "localhost")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("bootstrap.servers=localhost: localhost is no host:port");
        assertThat(cli.run("node", "--data-dir", dir.toString(), "-c", "linger.ms=abc")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("linger.ms=abc: ");
        // was found as the node's configuration was made, without usage, naming lob.http.port
        assertThat(cli.run("node", "--data-dir", dir.toString(), "--http-port", "70000")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--http-port 70000: must be between 0 and 65535").contains("Usage:");
        assertThat(cli.run("node", "--data-dir", dir.toString(), "--node-id", "n 1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--node-id n 1: ").contains("Usage:");
        // was found only once a broker answered, by the client (without one: "no Kafka broker answers", exit 1)
        assertThat(cli.run("delete", "doc", "--bootstrap", "127.0.0.1:1", "-c", "lob.producer.max.request.size=100000"))
                .isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.chunk.size=524288 does not fit max.request.size=100000");
        // the node's own broker would have it: found once it and the registry had started, blaming "another node or server"
        assertThat(cli.run("node", "--data-dir", dir.toString(), "--http-port", "9092")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("--http-port 9092 is the embedded cluster's --kafka-port too");
        assertThat(cli.run("node", "--data-dir", dir.toString(), "--registry-port", "8080")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.http.port 8080 is the embedded cluster's --registry-port too"); // its default
        // the misspelt key, not the node that does not answer
        assertThat(cli.run("replay", "--partition", "0", "--data-dir", dir.resolve("r").toString(), "--verify", "--node",
                "http://127.0.0.1:1", "-c", "lob.chunk.sise=1")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(cli.err()).contains("lob.chunk.sise");
    }
}
