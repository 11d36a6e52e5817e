package io.lobstream.app.demo;

import io.lobstream.client.LobClient;
import io.lobstream.client.LobWrite;
import org.apache.kafka.clients.producer.RecordMetadata;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The demo's (and the pipeline benchmark's) writers: threads that PUT (insert or update) and
 * DELETE random ids among {@code ids}, values of random size in {@code [minBytes, maxBytes]},
 * with a bounded number of commands in flight. With {@link #insertsOnly()} every PUT names a
 * new id instead.
 */
public final class LoadGenerator implements AutoCloseable {
    /** Told of every acknowledged command: where Kafka put it, when it was sent, and its value bytes. */
    public interface AckListener {
        void acked(RecordMetadata where, long sentNanos, int bytes);
    }

    private final LobClient client;
    private final int ids;
    private final int minBytes;
    private final int maxBytes;
    private final double deleteShare;
    private final Semaphore inFlight = new Semaphore(64);
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong acked = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final List<Thread> threads = new ArrayList<>();
    private final String run = Long.toString(System.currentTimeMillis(), 36);
    private volatile boolean running = true;
    private volatile boolean inserts;
    private volatile AckListener listener = (md, sent, n) -> { };
    private volatile BooleanSupplier mayWrite = () -> true;

    public LoadGenerator(LobClient client, int ids, int minBytes, int maxBytes, double deleteShare) {
        this.client = client;
        this.ids = ids;
        this.minBytes = minBytes;
        this.maxBytes = maxBytes;
        this.deleteShare = deleteShare;
    }

    /** The id of LOB number {@code n} (0 <= n < ids). */
    public static String id(int n) {
        return "lob-" + n;
    }

    /**
     * Every PUT writes a new id ({@code ins-<run>-<thread>-<n>}, the run's start time in base 36: a run on a reused
     * data directory inserts, not updates the last run's); no deletes. Call before {@link #start}.
     */
    public LoadGenerator insertsOnly() {
        this.inserts = true;
        return this;
    }

    /**
     * Writes only while {@code mayWrite} says so (checked before each command, every
     * millisecond while it says no): a bound on what the writer has not applied yet, say. Call before
     * {@link #start}.
     */
    public LoadGenerator writeWhile(BooleanSupplier mayWrite) {
        this.mayWrite = mayWrite;
        return this;
    }

    /** Call before {@link #start}. */
    public LoadGenerator onAck(AckListener listener) {
        this.listener = listener;
        return this;
    }

    public void start(int producers) {
        for (int i = 0; i < producers; i++) {
            long seed = 42L + i;
            int thread = i;
            Thread t = new Thread(() -> loop(thread, new SplittableRandom(seed)), "load-" + i);
            t.setDaemon(true);
            t.setUncaughtExceptionHandler((dead, e) -> {
                // a producer gone says so, and counts as a failure: the load it was to send is missing
                failed.incrementAndGet();
                System.err.println(dead.getName() + " stopped: " + e);
            });
            threads.add(t);
            t.start();
        }
    }

    private void loop(int thread, SplittableRandom rnd) {
        byte[] noise = new byte[maxBytes + 4096];
        rnd.nextBytes(noise);
        long n = 0;
        while (running) {
            while (running && !mayWrite.getAsBoolean()) {
                LockSupport.parkNanos(1_000_000);
            }
            String id = inserts ? "ins-" + run + "-" + thread + "-" + n++ : id(rnd.nextInt(ids));
            boolean delete = !inserts && rnd.nextDouble() < deleteShare;
            byte[] value = delete ? null : value(rnd, noise);
            try {
                inFlight.acquire(); // after what may throw: from here every way out gives the permit back
            } catch (InterruptedException e) {
                return;
            }
            long t0 = System.nanoTime();
            LobWrite future;
            try {
                future = delete ? client.delete(id) : client.put(id, value, "application/octet-stream");
            } catch (Error e) {
                inFlight.release(); // the thread ends (uncaught, counted): its permit back, or close() would wait for ever
                throw e;
            } catch (RuntimeException e) {
                // refused before it was sent (a closed producer, a registry away): counted, and its permit back, or
                // close() would wait for it for ever
                failed.incrementAndGet();
                inFlight.release();
                LockSupport.parkNanos(10_000_000); // no hot loop while every send fails
                continue;
            }
            sent.incrementAndGet();
            int size = delete ? 0 : value.length;
            future.whenComplete((md, err) -> {
                try {
                    if (err != null) {
                        failed.incrementAndGet();
                    } else {
                        acked.incrementAndGet();
                        listener.acked(md, t0, size);
                    }
                } finally {
                    inFlight.release(); // last: close() returns once every acknowledgement is counted
                }
            });
        }
    }

    private byte[] value(SplittableRandom rnd, byte[] noise) {
        int size = minBytes + rnd.nextInt(maxBytes - minBytes + 1);
        int from = rnd.nextInt(4096);
        byte[] v = java.util.Arrays.copyOfRange(noise, from, from + size);
        bytes.addAndGet(size);
        return v;
    }

    public long sent() {
        return sent.get();
    }

    public long acked() {
        return acked.get();
    }

    public long failed() {
        return failed.get();
    }

    public long bytes() {
        return bytes.get();
    }

    /** Stops sending and waits for every command in flight to be acknowledged. */
    @Override
    public void close() throws InterruptedException {
        running = false;
        for (Thread t : threads) {
            t.join();
        }
        client.flush();
        inFlight.acquire(64);
        inFlight.release(64);
    }
}
