package io.lobstream.app.cli;

import io.lobstream.client.LobClient;
import io.lobstream.client.LobWrite;
import io.lobstream.client.LobWrites;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStore;
import io.lobstream.store.index.Attributes;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The write commands: put, write, append, truncate, delete. Each sends its command(s) with
 * {@link LobClient}, waits for Kafka's acknowledgement and, with --wait-applied (the default),
 * until the writer has committed past it, having applied it (any node then serves the new
 * version) or dead-lettered it: exit 0, 3 (not within --timeout) or 4 (dead-lettered, with the
 * reason). Waiting needs Kafka only; --node is asked for the new ETag, to print it.
 */
final class WriteCommands {
    private WriteCommands() {
    }

    /** What a write command sends. */
    @FunctionalInterface
    interface Send {
        LobWrite send(LobWrites client) throws Exception;
    }

    /** What a write command that carries bytes sends, given the input's stream, length and a progress bar. */
    @FunctionalInterface
    interface SendBytes {
        LobWrite send(LobWrites client, java.io.InputStream in, long length, ProgressBar progress)
                throws Exception;
    }

    /** The shared part: options, sending, acknowledgement and read-your-writes. */
    abstract static class Base implements Callable<Integer> {
        /** How long a stop (Ctrl-C) waits for the upload it cuts short to send its ABORT and say what was sent. */
        static final Duration STOP_WAIT = Duration.ofSeconds(10);

        @Mixin
        ClusterOptions cluster;

        @Mixin
        WaitOptions wait;

        @Parameters(index = "0", paramLabel = "ID", description = "The LOB id.")
        String id;

        @Option(names = "--idempotency-key", paramLabel = "KEY",
                description = "Makes the command safe to run again: run with the same KEY (and the same ID, FILE and options) "
                        + "within lob.command.dedupe.window.ms (an hour), it is applied once; a put that stopped part-way goes on "
                        + "where it stopped (from the start once its upload expired). Default: every run is a new write.")
        String idempotencyKey;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        /** The bytes FILE holds, once read (-1: a command without FILE). */
        private long inputLength = -1;

        /**
         * An id the index cannot hold (the writer would dead-letter it) is a bad argument, as is an empty key, and a wait
         * of nothing: the write would be sent and then reported as not applied (exit 3), inviting a retry that applies it twice.
         */
        private void checkArguments() {
            if (wait.waitApplied && wait.timeout.toMillis() == 0) { // (the wait is in milliseconds: 500us would be none)
                throw new CommandLine.ParameterException(spec.commandLine(), "--timeout under a millisecond: no write is applied at "
                        + "once; give the wait for the writer (e.g. 30s), or --no-wait-applied");
            }
            if (id.isEmpty()) {
                throw new CommandLine.ParameterException(spec.commandLine(), "the LOB id must not be empty");
            }
            try {
                LobStore.checkId("the LOB id", id);
            } catch (IllegalArgumentException tooLong) {
                throw new CommandLine.ParameterException(spec.commandLine(), tooLong.getMessage());
            }
            if (idempotencyKey != null && idempotencyKey.isEmpty()) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--idempotency-key must not be empty");
            }
            if (wait.waitApplied) {
                wait.node = NodeUrl.resolve(wait.node, cluster.config, spec.commandLine());
            }
        }

        int run(Send send) throws Exception {
            checkArguments();
            LobStreamConfig config = connect();
            try (LobClient client = client(config)) {
                return send(config, client, send);
            }
        }

        /** The configuration (a misspelt -c key is a usage error), once a broker answers. */
        private LobStreamConfig connect() throws InterruptedException {
            LobStreamConfig config = cluster.streamConfig(null);
            LobClient.checkSettings(config); // a chunk the producer cannot carry: a bad argument, said without a broker
            // --timeout, when it is shorter, bounds this wait too, unless nothing is waited for after the send
            boolean shorter = wait.waitApplied && wait.timeout.compareTo(BrokerCheck.WAIT) < 0;
            // waiting, the client asks for the topics itself (watchApplied); else the send would wait 60 s on a missing one
            BrokerCheck.requireAnswer(config, shorter ? wait.timeout : BrokerCheck.WAIT, wait.waitApplied ? null : config.topics().commands());
            return config;
        }

        private LobClient client(LobStreamConfig config) {
            LobClient client = new LobClient(config);
            if (wait.waitApplied) {
                try {
                    client.watchApplied(); // no writer ever ran (no dead-letter topic): said before anything is sent
                } catch (RuntimeException e) {
                    client.close();
                    throw e;
                }
            }
            return client;
        }

        private int send(LobStreamConfig config, LobClient client, Send send) throws Exception {
            LobWrite write;
            try {
                write = send.send(idempotencyKey == null ? client : client.idempotent(idempotencyKey));
            } catch (IllegalArgumentException refused) {
                // the client refuses before sending what the writer would dead-letter (a value over
                // lob.value.max.bytes, a write past it): a bad argument, exit 2, as the README says
                throw new CommandLine.ParameterException(spec.commandLine(), refused.getMessage());
            }
            acknowledged(write.get());
            return wait.waitApplied
                    ? Waits.untilApplied(write, inPieces() && inputLength > config.get(LobStreamConfig.CHUNK_SIZE),
                    client.writerGroup(), new NodeHttp(wait.node), wait.timeout, spec.commandLine().getErr())
                    : Waits.APPLIED;
        }

        /** Whether the command's bytes, over lob.chunk.size, go in pieces applied one by one (a write or append). */
        boolean inPieces() {
            return false;
        }

        private void acknowledged(RecordMetadata md) {
            spec.commandLine().getErr().printf("%s %s: acknowledged at %s-%d@%d%n", spec.name(), id, md.topic(), md.partition(), md.offset());
        }

        /** The most bytes FILE may hold, as the client checks them: a value's most, {@code lob.value.max.bytes}. */
        long maxInputBytes(long valueMaxBytes) {
            return valueMaxBytes;
        }

        /**
         * Sends the bytes of FILE (or stdin). The id, the configuration, a broker and (with --wait-applied) a writer's
         * dead-letter topic are checked before a stdin is spooled (it may run for minutes), and the spooling stops at the
         * most bytes the command may send.
         */
        int runWithFile(String file, SendBytes send) throws Exception {
            checkArguments();
            String problem = InputFile.problem(file);
            if (problem != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), problem);
            }
            LobStreamConfig config = connect();
            long valueMax = config.get(LobStreamConfig.VALUE_MAX_BYTES);
            try (LobClient client = client(config)) {
                InputFile input;
                try {
                    input = InputFile.open(file, maxInputBytes(valueMax));
                } catch (InputFile.TooLong tooLong) {
                    throw new CommandLine.ParameterException(spec.commandLine(), (file.equals("-") ? "standard input" : file) + ": "
                            + tooLong.getMessage() + ", more than the value may hold (lob.value.max.bytes " + valueMax
                            + "): the writer would dead-letter it");
                }
                try (InputFile in = input) {
                    long length = in.length();
                    inputLength = length;
                    ProgressBar progress = new ProgressBar(spec.name() + " " + id, length);
                    try {
                        return send(config, client, c -> sendStoppable(client, () -> send.send(c, in.stream(), length, progress)));
                    } finally {
                        progress.finish();
                    }
                }
            }
        }

        /**
         * Runs {@code sending} (the records of a value handed to the producer) so that a Ctrl-C or SIGTERM meanwhile stops
         * it at its next record: an upload is aborted, so that the writer frees what it took at once, not after
         * lob.upload.timeout.ms (a put run again would take as much again meanwhile), and the command says what it sent;
         * the JVM waits for that, {@link #STOP_WAIT} at most. Outside the sending (input spooled, waiting for the writer)
         * a signal ends the command at once, as before.
         */
        private static LobWrite sendStoppable(LobClient client, Callable<LobWrite> sending) throws Exception {
            Thread stop = new Thread(() -> {
                client.stopSending("stopped by a SIGTERM or Ctrl-C");
                try {
                    LobStreamCli.awaitCommandEnd(STOP_WAIT);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "write-stop");
            Runtime.getRuntime().addShutdownHook(stop);
            try {
                return sending.call();
            } finally {
                try {
                    Runtime.getRuntime().removeShutdownHook(stop);
                } catch (IllegalStateException stopping) {
                    // the JVM is stopping: the hook runs, and waits for the command to say how it ended
                }
            }
        }
    }

    @Command(name = "put", mixinStandardHelpOptions = true,
            description = "Write a whole value (from a file, or - for stdin) as the new version of a LOB. Values over lob.chunk.size "
                    + "go as one upload of chunks, published when the last one is applied and the CRC32C matches.")
    static final class Put extends Base {
        @Parameters(index = "1", paramLabel = "FILE", description = "File to read, or - for standard input.")
        String file;

        @Option(names = "--content-type", paramLabel = "TYPE",
                description = "Media type, served back as Content-Type (default: none, served as application/octet-stream).")
        String contentType;

        @Option(names = "--meta", paramLabel = "KEY=VALUE", description = "User metadata, served back as X-LobStream-Meta-KEY; repeatable.")
        Map<String, String> metadata = new LinkedHashMap<>();

        @Override
        public Integer call() throws Exception {
            String problem = Attributes.of(contentType, metadata).problem();
            if (problem != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), problem);
            }
            return runWithFile(file, (client, in, length, progress) -> client.put(id, in, length, contentType, metadata, progress));
        }
    }

    @Command(name = "write", mixinStandardHelpOptions = true,
            description = "Overwrite bytes of a LOB from OFFSET (at most its length; past the end it grows). The new version shares "
                    + "every unchanged page with the old one.")
    static final class Write extends Base {
        @Option(names = "--offset", required = true, description = "Where the bytes go (0 to the LOB's length).")
        long offset;

        @Parameters(index = "1", paramLabel = "FILE", description = "File to read, or - for standard input.")
        String file;

        @Override
        public Integer call() throws Exception {
            if (offset < 0) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--offset must be >= 0");
            }
            long valueMax = cluster.streamConfig(null).get(LobStreamConfig.VALUE_MAX_BYTES);
            if (offset > valueMax) { // else found once a broker answered, as "standard input runs past 0 bytes"
                throw new CommandLine.ParameterException(spec.commandLine(), "--offset " + offset + " is past lob.value.max.bytes ("
                        + valueMax + "): the writer would dead-letter the write");
            }
            return runWithFile(file, (client, in, length, progress) -> client.write(id, offset, in, length, progress));
        }

        @Override
        long maxInputBytes(long valueMaxBytes) {
            return Math.max(0, valueMaxBytes - offset); // the value reaches offset + length
        }

        @Override
        boolean inPieces() {
            return true;
        }
    }

    @Command(name = "append", mixinStandardHelpOptions = true, description = "Append bytes to a LOB (creating it if needed).")
    static final class Append extends Base {
        @Parameters(index = "1", paramLabel = "FILE", description = "File to read, or - for standard input.")
        String file;

        @Override
        public Integer call() throws Exception {
            return runWithFile(file, (client, in, length, progress) -> client.append(id, in, length, progress));
        }

        @Override
        boolean inPieces() {
            return true;
        }
    }

    @Command(name = "truncate", mixinStandardHelpOptions = true, description = "Cut a LOB to --length bytes.")
    static final class Truncate extends Base {
        @Option(names = "--length", required = true, description = "The new length (at most the current one).")
        long length;

        @Override
        public Integer call() throws Exception {
            if (length < 0) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--length must be >= 0");
            }
            return run(client -> client.truncate(id, length));
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true, description = "Delete a LOB; its last version becomes history for purge.")
    static final class Delete extends Base {
        @Override
        public Integer call() throws Exception {
            return run(client -> client.delete(id));
        }
    }
}
