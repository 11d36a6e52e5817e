package io.lobstream.app.demo;

import io.lobstream.ingest.client.LobClient;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The demo's writers: threads that PUT (insert or update) and DELETE random ids among
 * {@code ids}, values of random size in {@code [minBytes, maxBytes]}, with a bounded number of
 * commands in flight.
 */
public final class LoadGenerator implements AutoCloseable {
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
    private volatile boolean running = true;

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

    public void start(int producers) {
        for (int i = 0; i < producers; i++) {
            long seed = 42L + i;
            Thread t = new Thread(() -> loop(new SplittableRandom(seed)), "load-" + i);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
    }

    private void loop(SplittableRandom rnd) {
        byte[] noise = new byte[maxBytes + 4096];
        rnd.nextBytes(noise);
        while (running) {
            try {
                inFlight.acquire();
            } catch (InterruptedException e) {
                return;
            }
            String id = id(rnd.nextInt(ids));
            var future = rnd.nextDouble() < deleteShare
                    ? client.delete(id)
                    : client.put(id, value(rnd, noise), "application/octet-stream");
            sent.incrementAndGet();
            future.whenComplete((md, err) -> {
                inFlight.release();
                if (err != null) {
                    failed.incrementAndGet();
                } else {
                    acked.incrementAndGet();
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
