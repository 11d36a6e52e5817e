package io.lobstream.app.cli;

import io.lobstream.ingest.client.LobClient;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;

/** {@code ./lobstream delete ID}. */
@Command(name = "delete", mixinStandardHelpOptions = true, description = "Delete a LOB; its pages are reclaimed by purge.")
final class DeleteCommand implements Callable<Integer> {
    @Mixin
    ClusterOptions cluster;

    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Option(names = "--wait-applied", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Return only once the node no longer serves the LOB (default: ${DEFAULT-VALUE}).")
    boolean waitApplied;

    @Option(names = "--node", defaultValue = "http://127.0.0.1:8080", description = "A node's HTTP API (default: ${DEFAULT-VALUE}).")
    String node;

    @Option(names = "--timeout", defaultValue = "60s")
    Duration timeout;

    @Override
    public Integer call() throws Exception {
        NodeHttp http = new NodeHttp(node);
        Optional<String> before = waitApplied ? http.etag(id) : Optional.empty();
        RecordMetadata md;
        try (LobClient client = new LobClient(cluster.streamConfig(null))) {
            md = client.delete(id).get();
        }
        System.err.printf("delete %s: acknowledged at %s-%d@%d%n", id, md.topic(), md.partition(), md.offset());
        if (waitApplied && before.isPresent()) {
            return Waits.untilVersionChanges(http, id, before, timeout) ? 0 : 3;
        }
        return 0;
    }
}
