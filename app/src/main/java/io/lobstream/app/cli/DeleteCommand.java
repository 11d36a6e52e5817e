package io.lobstream.app.cli;

import io.lobstream.ingest.client.LobClient;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.util.Optional;
import java.util.concurrent.Callable;

/** {@code ./lobstream delete ID}. */
@Command(name = "delete", mixinStandardHelpOptions = true, description = "Delete a LOB; its pages are reclaimed by purge.")
final class DeleteCommand implements Callable<Integer> {
    @Mixin
    ClusterOptions cluster;

    @Parameters(index = "0", paramLabel = "ID")
    String id;

    @Mixin
    WaitOptions wait;

    @Override
    public Integer call() throws Exception {
        NodeHttp http = new NodeHttp(wait.node);
        Optional<String> before = wait.waitApplied ? http.etag(id) : Optional.empty();
        RecordMetadata md;
        try (LobClient client = new LobClient(cluster.streamConfig(null))) {
            md = client.delete(id).get();
        }
        System.err.printf("delete %s: acknowledged at %s-%d@%d%n", id, md.topic(), md.partition(), md.offset());
        if (wait.waitApplied && before.isPresent()) {
            return Waits.untilVersionChanges(http, id, before, wait.timeout) ? 0 : 3;
        }
        return 0;
    }
}
