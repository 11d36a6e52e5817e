package io.lobstream.app.cli;

import io.lobstream.ingest.client.LobClient;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;

/** {@code ./lobstream put ID FILE|-}. */
@Command(name = "put", mixinStandardHelpOptions = true, description = "Write a whole value (from a file, or - for stdin) as the new version of a LOB.")
final class PutCommand implements Callable<Integer> {
    @Mixin
    ClusterOptions cluster;

    @Parameters(index = "0", paramLabel = "ID", description = "The LOB id.")
    String id;

    @Parameters(index = "1", paramLabel = "FILE", description = "File to read, or - for standard input.")
    String file;

    @Option(names = "--wait-applied", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Return only once the node serves the new version (read-your-writes; default: ${DEFAULT-VALUE}).")
    boolean waitApplied;

    @Option(names = "--node", defaultValue = "http://127.0.0.1:8080", description = "A node's HTTP API, for --wait-applied (default: ${DEFAULT-VALUE}).")
    String node;

    @Option(names = "--timeout", defaultValue = "60s", description = "How long to wait for the write to be applied (default: ${DEFAULT-VALUE}).")
    Duration timeout;

    @Override
    public Integer call() throws Exception {
        NodeHttp http = new NodeHttp(node);
        Optional<String> before = waitApplied ? http.etag(id) : Optional.empty();
        RecordMetadata md;
        try (LobClient client = new LobClient(cluster.streamConfig(null));
             InputStream in = file.equals("-") ? System.in : Files.newInputStream(Path.of(file))) {
            md = client.put(id, in).get();
        }
        System.err.printf("put %s: acknowledged at %s-%d@%d%n", id, md.topic(), md.partition(), md.offset());
        if (waitApplied) {
            return Waits.untilVersionChanges(http, id, before, timeout) ? 0 : 3;
        }
        return 0;
    }
}
