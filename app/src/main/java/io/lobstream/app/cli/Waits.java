package io.lobstream.app.cli;

import java.time.Duration;
import java.util.Optional;

/** Read-your-writes for the CLI: poll the node until a LOB's version changes. */
final class Waits {
    private Waits() {
    }

    static boolean untilVersionChanges(NodeHttp http, String id, Optional<String> before, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "unreachable";
        while (System.nanoTime() < deadline) {
            try {
                Optional<String> now = http.etag(id);
                if (!now.equals(before)) {
                    System.err.printf("%s: applied, version %s%n", id, now.map(v -> v.replace("\"", "")).orElse("(deleted)"));
                    return true;
                }
                last = "still at version " + before.orElse("(none)");
            } catch (java.io.IOException e) {
                last = e.getMessage();
            }
            Thread.sleep(50);
        }
        System.err.printf("%s: not applied after %s (%s; node %s)%n", id, timeout, last, http.base());
        return false;
    }
}
