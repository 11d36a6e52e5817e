package io.lobstream.app.cli;

import picocli.CommandLine.Option;

import java.time.Duration;

/** Read-your-writes options of the write commands: wait until the node serves the change. */
final class WaitOptions {
    @Option(names = "--wait-applied", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Return only once the writer has committed past the command (read-your-writes; on by default, "
                    + "--no-wait-applied: once Kafka has it): exit 0 applied, 4 dead-lettered (reason printed), 3 not within --timeout.")
    boolean waitApplied;

    @Option(names = "--node", paramLabel = "URL", converter = NodeUrl.class,
            description = "Any node's HTTP API, asked for the new ETag once applied (" + NodeUrl.DEFAULT_DOC + ").")
    String node;

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "60s", description = "How long to wait for the writer to commit the command (default: ${DEFAULT-VALUE}); "
            + "with --wait-applied, also how long to wait for a Kafka broker to answer at all (1s to 10s).")
    Duration timeout;
}
