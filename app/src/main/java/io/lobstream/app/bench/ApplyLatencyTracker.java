package io.lobstream.app.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.lobstream.app.embedded.NodeProcess;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.producer.RecordMetadata;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.PriorityBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Matches acknowledged commands with the writer's applied offsets: a command at offset o of
 * partition p is applied once the tablespace of p records an applied offset ≥ o.
 */
final class ApplyLatencyTracker implements Runnable {
    /**
     * The pause between two polls. Each costs the node about half a millisecond of CPU and this
     * JVM about one (session 19), on the same two cores as the pipeline: every 5 ms, that would
     * be a fifth of a core. Until session 19 the node's HTTP server held each answer 40 ms
     * (Nagle, see {@code HttpServers}), so the tracker polled about 20 times a second, not the
     * 200 it asked for.
     */
    static final long POLL_INTERVAL_NANOS = 20_000_000;
    private final NodeProcess node;
    private final List<PriorityBlockingQueue<long[]>> queues = new ArrayList<>();
    private final AtomicLong pending = new AtomicLong();
    private final Histogram latency = new Histogram(TimeUnit.MINUTES.toMicros(10), 3);
    private long applied;
    private long appliedBytes;
    private volatile long lastApplied;
    private volatile long measureFrom = Long.MAX_VALUE;
    private volatile boolean running = true;

    ApplyLatencyTracker(NodeProcess node, int partitions) {
        this.node = node;
        for (int p = 0; p < partitions; p++) {
            queues.add(new PriorityBlockingQueue<>(64, Comparator.comparingLong(c -> c[0])));
        }
    }

    /**
     * Called from the client's callback threads, several of them: not in offset order, hence a queue per partition
     * ordered by offset (a command behind a higher one not yet applied would wait a poll longer).
     */
    void acked(RecordMetadata md, long sentNanos, int bytes) {
        pending.incrementAndGet();
        queues.get(md.partition()).add(new long[]{md.offset(), sentNanos, bytes});
    }

    @Override
    public void run() {
        while (running) {
            try {
                poll();
            } catch (IOException | RuntimeException e) {
                // the node busy or a tablespace moving (rebalance): try again
            } catch (InterruptedException e) {
                return;
            }
            LockSupport.parkNanos(POLL_INTERVAL_NANOS);
        }
    }

    private void poll() throws IOException, InterruptedException {
        if (pending.get() == 0) {
            return;
        }
        JsonNode status = node.status();
        long now = System.nanoTime();
        for (JsonNode part : status.path("partitions")) {
            PriorityBlockingQueue<long[]> q = queues.get(part.path("partition").asInt());
            long offset = part.path("applied_offset").asLong(-1);
            for (long[] c; (c = q.peek()) != null && c[0] <= offset; ) {
                c = q.poll(); // (an ack below it may have come since the peek: the head is at most c's offset, so applied)
                if (now >= measureFrom) {
                    synchronized (this) {
                        // throughput: every apply in the window; latency: the commands sent in it
                        if (c[1] >= measureFrom) {
                            latency.recordValue(Math.min(latency.getHighestTrackableValue(), Math.max(0, (now - c[1]) / 1000)));
                        }
                        applied++;
                        appliedBytes += c[2];
                    }
                    lastApplied = now;
                }
                pending.decrementAndGet();
            }
        }
    }

    long pending() {
        return pending.get();
    }

    synchronized long applied() {
        return applied;
    }

    synchronized long appliedBytes() {
        return appliedBytes;
    }

    long lastAppliedNanos() {
        return lastApplied;
    }

    synchronized Histogram latency() {
        return latency.copy();
    }

    /** Counts applies from {@code nanoTime} on, and the latency of commands sent from then on. */
    synchronized void measureFrom(long nanoTime) {
        latency.reset();
        applied = 0;
        appliedBytes = 0;
        measureFrom = nanoTime;
    }

    void stop() {
        running = false;
    }
}
