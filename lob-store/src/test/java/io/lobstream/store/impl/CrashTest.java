package io.lobstream.store.impl;

import io.lobstream.store.LobReadHandle;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.purge.LocalPurger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Crash safety: a child JVM writes (put, write, append, truncate, delete from 4 threads, each
 * write durable before it is acknowledged) while a fifth thread reclaims superseded versions,
 * compacts and flushes (so freed pages are granted again, versions move into holes and the file is
 * cut whenever its end is free), and is killed with SIGKILL at a random moment, many times over
 * one tablespace. After each kill the store must open, fsck must be clean, and every
 * LOB must hold its last acknowledged value, or the value of the one write that was in flight.
 */
class CrashTest {
    private static final String ABSENT = "absent";

    @TempDir
    Path dir;

    @Test
    void everyAcknowledgedWriteSurvivesSigkill() throws Exception {
        Map<String, String> acked = new HashMap<>();
        Map<String, List<String>> history = new HashMap<>(); // per id, every line the child printed: for the failure message
        int runs = 12;
        for (int run = 0; run < runs; run++) {
            Map<String, String> inFlight = new HashMap<>();
            // its own java.io.tmpdir: RocksDB unpacks its native library there and a SIGKILLed JVM cannot delete it
            Path tmp = java.nio.file.Files.createDirectories(dir.resolve("child-tmp"));
            Process child = new ProcessBuilder(javaBin(), "-Xmx256m", "-Djava.io.tmpdir=" + tmp, "-cp", System.getProperty("java.class.path"),
                    Writer.class.getName(), dir.toString(), "r" + run)
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
            int ackedBefore;
            synchronized (acked) {
                ackedBefore = acked.size();
            }
            Thread reader = new Thread(() -> readAcks(child.getInputStream(), acked, inFlight, history));
            reader.start();
            // the kill comes at a random moment once the child writes (a busy machine may start a JVM slowly); in the
            // first run once a write was acknowledged, so that every run has acknowledged values to check (a kill 50 ms
            // into the first write, slow with a cold JVM, left none, and the check below failed on a fast machine)
            long startDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (child.isAlive() && System.nanoTime() < startDeadline
                    && !(run == 0 ? wroteSince(acked, Map.of(), ackedBefore) : wroteSince(acked, inFlight, ackedBefore))) {
                Thread.sleep(5);
            }
            long killAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ThreadLocalRandom.current().nextInt(50, 1500));
            while (System.nanoTime() < killAt && child.isAlive()) {
                Thread.sleep(5);
            }
            assertThat(child.isAlive()).as("writer still running at the kill (run %d)", run).isTrue();
            // SIGKILL through the handle: Process.destroyForcibly() also closes our end of the child's stdout, and
            // the lines still in the pipe (a BEGIN whose write then published) would be lost, failing the check below
            child.toHandle().destroyForcibly();
            child.waitFor();
            reader.join(); // reads what the child wrote up to its death

            try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
                FsckReport fsck = store.fsck(true);
                assertThat(fsck.problems()).as("fsck after kill %d", run).isEmpty();
                int checked = 0;
                for (Map.Entry<String, String> e : acked.entrySet()) {
                    String now = sha(store, e.getKey());
                    String pending = inFlight.get(e.getKey());
                    assertThat(now).as("%s after kill %d (its lines: %s)", e.getKey(), run, history.get(e.getKey()))
                            .isIn(e.getValue(), pending == null ? e.getValue() : pending);
                    if (!now.equals(e.getValue())) {
                        e.setValue(now); // the in-flight write had published: it is the value from now on
                    }
                    checked++;
                }
                assertThat(checked).isPositive();
            }
        }
    }

    private static boolean wroteSince(Map<String, String> acked, Map<String, String> inFlight, int ackedBefore) {
        synchronized (acked) {
            return acked.size() > ackedBefore || !inFlight.isEmpty();
        }
    }

    /** Reads "BEGIN id sha" / "ACK id sha" lines until the child dies. */
    private static void readAcks(InputStream out, Map<String, String> acked, Map<String, String> inFlight,
                                 Map<String, List<String>> history) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(out, StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                String[] f = line.split(" ");
                if (f.length != 3) {
                    continue; // a line torn by the kill
                }
                synchronized (acked) {
                    history.computeIfAbsent(f[1], k -> new ArrayList<>()).add(f[0] + " " + f[2].substring(0, Math.min(8, f[2].length())));
                    if (f[0].equals("BEGIN")) {
                        inFlight.put(f[1], f[2]);
                    } else if (f[0].equals("ACK")) {
                        acked.put(f[1], f[2]);
                        inFlight.remove(f[1]);
                    }
                }
            }
        } catch (IOException ignored) {
            // the child was killed
        }
    }

    private static String sha(LobStore store, String id) throws IOException {
        var h = store.open(id);
        if (h.isEmpty()) {
            return ABSENT;
        }
        try (LobReadHandle handle = h.get(); InputStream in = handle.stream(0, handle.length())) {
            return sha(in.readAllBytes());
        }
    }

    static String sha(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String javaBin() {
        return ProcessHandle.current().info().command().orElse("java");
    }

    /**
     * The child: 4 threads, each over its own ids, doing random writes with per-write durability.
     * Before a write it prints the sha256 the LOB will have; after the write returns, the ack.
     * A fifth thread reclaims superseded versions, compacts and flushes (which shrinks the file).
     */
    public static final class Writer {
        public static void main(String[] args) throws Exception {
            Path dir = Path.of(args[0]);
            String run = args[1];
            // purge runs beside the writers, not ahead of them: no backpressure
            LobStoreConfig config = LobStoreConfig.defaults().with(LobStoreConfig.SYNC_EACH_WRITE.name(), true)
                    .with(LobStoreConfig.HISTORY_MAX.name(), 0).with(LobStoreConfig.HISTORY_MAX_RATIO.name(), 0.0)
                    .with(LobStoreConfig.COMPACT_MIN_FREE_RATIO.name(), 0.0)
                    .with(LobStoreConfig.SHRINK_MIN_PAGES.name(), 8);
            DefaultLobStore store = DefaultLobStore.open(dir, config);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int thread = t;
                threads.add(new Thread(() -> {
                    try {
                        writeForever(store, run + "-t" + thread, new Random(run.hashCode() * 31L + thread));
                    } catch (IOException e) {
                        e.printStackTrace();
                        System.exit(3);
                    }
                }));
            }
            threads.add(new Thread(() -> {
                try (LocalPurger purger = new LocalPurger(store, 64)) {
                    while (true) {
                        purger.purgeOnce();
                        // a run moves versions only if nothing was written since the previous one: two in a row
                        // often find such a gap between the writers' fsyncs, so moves race writes and the kill
                        store.compact();
                        long moved = store.compact();
                        if (moved > 0) {
                            System.err.println("compaction moved " + moved + " pages"); // stderr: not an ack line
                        }
                        store.flush();
                        Thread.sleep(5);
                    }
                } catch (IOException | InterruptedException e) {
                    e.printStackTrace();
                    System.exit(4);
                }
            }));
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join();
            }
        }

        private static void writeForever(LobStore store, String prefix, Random random) throws IOException {
            Map<String, byte[]> mine = new HashMap<>();
            while (true) {
                String id = prefix + "-" + random.nextInt(6);
                byte[] old = mine.get(id);
                int op = random.nextInt(10);
                byte[] data = new byte[random.nextInt(4) == 0 ? random.nextInt(200) : random.nextInt(120_000)];
                random.nextBytes(data);
                byte[] next;
                if (old == null || op < 3) {
                    next = data;
                    say("BEGIN", id, sha(next));
                    store.put(id, new ByteArrayInputStream(data), data.length, null, null);
                } else if (op < 6) {
                    int at = random.nextInt(old.length + 1);
                    next = Arrays.copyOf(old, Math.max(old.length, at + data.length));
                    System.arraycopy(data, 0, next, at, data.length);
                    say("BEGIN", id, sha(next));
                    store.write(id, at, new ByteArrayInputStream(data), data.length, null);
                } else if (op < 8) {
                    next = Arrays.copyOf(old, old.length + data.length);
                    System.arraycopy(data, 0, next, old.length, data.length);
                    say("BEGIN", id, sha(next));
                    store.append(id, new ByteArrayInputStream(data), data.length, null);
                } else if (op < 9) {
                    next = Arrays.copyOf(old, random.nextInt(old.length + 1));
                    say("BEGIN", id, sha(next));
                    store.truncate(id, next.length, null);
                } else {
                    next = null;
                    say("BEGIN", id, ABSENT);
                    store.delete(id, null);
                }
                if (next == null) {
                    mine.remove(id);
                } else {
                    mine.put(id, next);
                }
                say("ACK", id, next == null ? ABSENT : sha(next));
            }
        }

        private static void say(String what, String id, String sha) {
            synchronized (System.out) {
                System.out.println(what + " " + id + " " + sha);
                System.out.flush();
            }
        }
    }
}
