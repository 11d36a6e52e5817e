package io.lobstream.app.cli;

import picocli.CommandLine.Option;

import java.time.Duration;

/** Read-your-writes options of the write commands: wait until the node serves the change. */
final class WaitOptions {
    @Option(names = "--wait-applied", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "Return only once the node serves the change (read-your-writes; default: ${DEFAULT-VALUE}).")
    boolean waitApplied;

    @Option(names = "--node", defaultValue = "http://127.0.0.1:8080", description = "A node's HTTP API, for --wait-applied (default: ${DEFAULT-VALUE}).")
    String node;

    @Option(names = "--timeout", defaultValue = "60s", description = "How long to wait for the change to be applied (default: ${DEFAULT-VALUE}).")
    Duration timeout;
}
