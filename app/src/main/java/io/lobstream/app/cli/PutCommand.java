package io.lobstream.app.cli;

import io.lobstream.ingest.client.LobClient;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
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

    @Mixin
    WaitOptions wait;

    @Override
    public Integer call() throws Exception {
        if (!file.equals("-") && Files.size(Path.of(file)) > cluster.streamConfig(null).get(io.lobstream.schema.LobStreamConfig.CHUNK_SIZE)) {
            System.err.println("lobstream put: " + file + " is larger than lob.chunk.size; chunked uploads are not supported yet");
            return 2;
        }
        NodeHttp http = new NodeHttp(wait.node);
        Optional<String> before = wait.waitApplied ? http.etag(id) : Optional.empty();
        RecordMetadata md;
        try (LobClient client = new LobClient(cluster.streamConfig(null));
             InputStream in = file.equals("-") ? System.in : Files.newInputStream(Path.of(file))) {
            md = client.put(id, in).get();
        }
        System.err.printf("put %s: acknowledged at %s-%d@%d%n", id, md.topic(), md.partition(), md.offset());
        if (wait.waitApplied) {
            return Waits.untilVersionChanges(http, id, before, wait.timeout) ? 0 : 3;
        }
        return 0;
    }
}
