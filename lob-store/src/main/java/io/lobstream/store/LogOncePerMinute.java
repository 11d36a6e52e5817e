package io.lobstream.store;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Which of a repeated log line to write: the first of each kind, then once a minute at most, with how many of that kind
 * were not written meanwhile. A failure that follows the request or record rate (a corrupt page read as often as asked,
 * a producer's every record, a poll retried every second) would otherwise bury the log.
 */
public final class LogOncePerMinute {
    private static final long MINUTE = TimeUnit.MINUTES.toNanos(1);
    /** Kinds kept at most (a kind is often an exception's text): past this all are forgotten, and said again. */
    private static final int KINDS_MAX = 1_000;

    private final LongSupplier nanoTime;
    /** Per kind: when it was last said (nanoTime), and how many times it was not said since. */
    private final Map<String, long[]> said = new HashMap<>();

    public LogOncePerMinute() {
        this(System::nanoTime);
    }

    LogOncePerMinute(LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
    }

    /** -1 if a line of {@code kind} is not to be written now (it is counted); else how many were not written since the last. */
    public synchronized long sayNow(String kind) {
        long now = nanoTime.getAsLong();
        long[] last = said.get(kind);
        if (last != null && now - last[0] < MINUTE) {
            last[1]++;
            return -1;
        }
        if (last == null && said.size() >= KINDS_MAX) {
            said.clear();
        }
        said.put(kind, new long[]{now, 0});
        return last == null ? 0 : last[1];
    }
}
