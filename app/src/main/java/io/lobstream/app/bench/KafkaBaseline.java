package io.lobstream.app.bench;

import io.lobstream.client.LobClient;
import io.lobstream.ingest.WriterStreamsSettings;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * The plain-Kafka phases of {@code bench pipeline}, on the same broker as the pipeline, with
 * values of the same sizes and keys, each to a scratch topic with as many partitions:
 * <ul>
 *   <li>{@link #produce}: a KafkaProducer alone, with the pipeline's LobClient's settings
 *       ({@link LobClient#producerSettings}: its defaults, idempotent, {@code acks=all}, and the
 *       Kafka settings given with {@code -c}). Its acknowledged
 *       MB/s is the "raw Kafka producer throughput", the denominator of
 *       {@code ratio_vs_raw_kafka}.</li>
 *   <li>{@link #produceAndConsume}: the same producer while a KafkaConsumer, set up as the
 *       writer's, reads every record it writes. Every byte then goes through the broker twice,
 *       in and out, as in the pipeline; what the consumer receives per second is the most any
 *       pipeline that reads its input once from Kafka could apply on this machine. The gap from
 *       there to the pipeline is what LobStream itself costs (pages, index, fsync, transactions,
 *       undo records, purge).</li>
 * </ul>
 * The values are byte arrays cut from random noise, the consumer only counts them: neither
 * phase does work that the pipeline would not.
 */
final class KafkaBaseline {
    /** In-flight bound of the producer threads, as the pipeline's load generator's. */
    static final int IN_FLIGHT = 64;
    /**
     * Free memory below which the page cache counts as full: the kernel keeps a few hundred MB free (0.2 GB on the
     * machines of BENCHMARKS.md once it was full). Having written as many bytes as were free is not enough: session 44's
     * run 2 had, and its first 7 s measured still took fresh memory, at 50–130 MB/s where the rest ran at 460–600.
     */
    static final long FULL_BELOW_BYTES = 1_000_000_000L;

    /**
     * One phase's figures over its measured window. {@code pageCacheFull}: false when the raw phase's warm-up ended (at
     * its longest, or early as the disk bounded what it could keep) with {@link #FULL_BELOW_BYTES} or more of the
     * machine's memory still free, so that the broker took fresh memory in the window, dear on this VM: its figures then
     * say more about the machine than about Kafka.
     */
    record Result(double tps, double mbPerS, double producedMbPerS, long failed, MachineCpu.Window cpu, boolean pageCacheFull) {
        Result withPageCacheFull(boolean full) {
            return new Result(tps, mbPerS, producedMbPerS, failed, cpu, full);
        }
    }

    private final LobStreamConfig config;
    private final int partitions;
    private final SizeRange sizes;
    private final int rows;
    private final int producers;
    private final Duration duration;
    private final Map<String, Supplier<Duration>> processes;
    private final BenchOutput out;

    KafkaBaseline(LobStreamConfig config, int partitions, SizeRange sizes, int rows, int producers, Duration duration,
                  Map<String, Supplier<Duration>> processes, BenchOutput out) {
        this.config = config;
        this.partitions = partitions;
        this.sizes = sizes;
        this.rows = rows;
        this.producers = producers;
        this.duration = duration;
        this.processes = processes;
        this.out = out;
    }

    /**
     * The producer alone (CSV phase {@code raw-kafka}). Its warm-up lasts {@code warmup}, and
     * after that until it has written {@code fillBytes} and the machine's free memory is below
     * {@link #FULL_BELOW_BYTES}, or {@code maxWarmup} has passed: the caller asks for the machine's
     * free memory, so that the page cache is full and the broker reuses its pages, as a broker that
     * has run for a while does (see {@link MachineMemory}). Where the topic's retention keeps too
     * little to fill the memory (the caller asked less, for the disk), it ends at {@code fillBytes}.
     */
    Result produce(String topic, Duration warmup, Duration maxWarmup, long fillBytes) throws InterruptedException {
        return produce("raw-kafka", topic, warmup, maxWarmup, fillBytes);
    }

    /** As {@link #produce(String, Duration, Duration, long)}, its rows in the CSV named {@code phase}. */
    Result produce(String phaseName, String topic, Duration warmup, Duration maxWarmup, long fillBytes) throws InterruptedException {
        long free = MachineMemory.freeBytes();
        try (Phase phase = new Phase(phaseName, topic, false)) {
            long started = System.nanoTime();
            PipelineBench.sleepUntil(started + warmup.toNanos());
            // written what was asked, and the page cache full; or what was asked, where the scratch topic keeps too little
            // to fill the free memory (a disk too small for the memory's worth: retention frees the pages written before)
            boolean cannotFill = PipelineBench.SCRATCH_RETENTION_FACTOR * fillBytes < free - FULL_BELOW_BYTES;
            while (fillBytes > 0 && !(phase.warmupBytes.get() >= fillBytes && (cannotFill || cacheFull()))
                    && System.nanoTime() < started + maxWarmup.toNanos()) {
                Thread.sleep(100);
            }
            long t0 = System.nanoTime();
            boolean full = cacheFull();
            out.note(String.format("%s phase: warm-up %.0f s, %.1f GB written; memory free %.1f GB at its start, %.1f GB now%s",
                    phaseName.replace("-kafka", "").replace('-', ' '), (t0 - started) / 1e9, phase.warmupBytes.get() / 1e9, free / 1e9, MachineMemory.freeBytes() / 1e9,
                    full ? "" : " (page cache not full: measured partly on fresh memory)"));
            return phase.measure(t0).withPageCacheFull(full);
        }
    }

    /** Whether the page cache has taken the free memory (always, where that is unknown: not Linux). */
    private static boolean cacheFull() {
        return MachineMemory.freeBytes() < FULL_BELOW_BYTES;
    }

    /** The producer with a consumer reading all it writes (CSV phase {@code kafka-e2e}); figures are the consumer's. */
    Result produceAndConsume(String topic, Duration warmup) throws InterruptedException {
        try (Phase phase = new Phase("kafka-e2e", topic, true)) {
            long started = System.nanoTime();
            PipelineBench.sleepUntil(started + warmup.toNanos());
            out.note(String.format("kafka e2e phase: warm-up %d s, %.1f GB of memory free now",
                    warmup.toSeconds(), MachineMemory.freeBytes() / 1e9));
            return phase.measure(System.nanoTime());
        }
    }

    /** Records counted in a measured window: how many, their bytes, when the last came. */
    private static final class Counter {
        final AtomicLong records = new AtomicLong();
        final AtomicLong bytes = new AtomicLong();
        final AtomicLong last = new AtomicLong();

        void add(int size, long now) {
            records.incrementAndGet();
            bytes.addAndGet(size);
            last.set(now);
        }
    }

    /** The producer threads (and the consumer, if asked for) of one phase, running until closed. */
    private final class Phase implements AutoCloseable {
        private final String name;
        private final String topic;
        private final KafkaProducer<String, byte[]> producer;
        private final Semaphore inFlight = new Semaphore(IN_FLIGHT);
        private final List<Thread> threads = new ArrayList<>();
        private final AtomicLong measureFrom = new AtomicLong(Long.MAX_VALUE);
        private final AtomicLong end = new AtomicLong(Long.MAX_VALUE);
        private final AtomicLong failed = new AtomicLong();
        final AtomicLong warmupBytes = new AtomicLong();
        private final Counter acked = new Counter();
        private final Counter consumed;
        private final KafkaConsumer<byte[], byte[]> consumer;

        Phase(String name, String topic, boolean consume) {
            this.name = name;
            this.topic = topic;
            // as the pipeline's LobClient's producer, -c settings included: the ratio compares two producers set up alike
            this.producer = new KafkaProducer<>(LobClient.producerSettings(config), new StringSerializer(), new ByteArraySerializer());
            this.consumed = consume ? new Counter() : null;
            try {
                this.consumer = consume ? newConsumer() : null;
            } catch (RuntimeException e) { // the caller's try-with-resources never got this phase to close
                producer.close(Duration.ZERO);
                throw e;
            }
            if (consume) {
                Thread t = new Thread(this::consume, name + "-consumer");
                threads.add(t);
                t.start();
            }
            for (int i = 0; i < producers; i++) {
                SplittableRandom rnd = new SplittableRandom(42L + i);
                Thread t = new Thread(() -> send(rnd), name + "-" + i);
                threads.add(t);
                t.start();
            }
        }

        /**
         * As the writer's consumer: the Kafka settings Kafka Streams hands to its clients (those given with {@code -c}),
         * read_committed, fetching as {@link WriterStreamsSettings#FETCH} says.
         */
        private KafkaConsumer<byte[], byte[]> newConsumer() {
            Map<String, Object> settings = config.commonClientConfig();
            settings.putAll(WriterStreamsSettings.FETCH);
            settings.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(settings, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            List<TopicPartition> all = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                all.add(new TopicPartition(topic, p));
            }
            try {
                c.assign(all);
                c.seekToEnd(all); // what the producers write from now on
                all.forEach(c::position); // resolved now, before they start
                return c;
            } catch (RuntimeException e) { // e.g. no leader yet for the scratch topic within the default API timeout
                c.close(Duration.ZERO);
                throw e;
            }
        }

        private void send(SplittableRandom rnd) {
            byte[] noise = new byte[sizes.max() + 4096];
            rnd.nextBytes(noise);
            while (System.nanoTime() < end.get()) {
                inFlight.acquireUninterruptibly();
                int size = sizes.min() + rnd.nextInt(sizes.max() - sizes.min() + 1);
                int from = rnd.nextInt(4096);
                byte[] v = java.util.Arrays.copyOfRange(noise, from, from + size);
                producer.send(new ProducerRecord<>(topic, "lob-" + rnd.nextInt(rows), v), (md, err) -> {
                    inFlight.release();
                    long now = System.nanoTime();
                    if (err != null) {
                        failed.incrementAndGet();
                    } else if (now >= measureFrom.get()) {
                        acked.add(size, now);
                    } else {
                        warmupBytes.addAndGet(size);
                    }
                });
            }
        }

        private void consume() {
            try {
                while (System.nanoTime() < end.get()) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                        long now = System.nanoTime();
                        if (now >= measureFrom.get() && now < end.get()) {
                            consumed.add(r.value().length, now);
                        }
                    }
                }
            } finally {
                consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
            }
        }

        /** The window from {@code t0}: a CSV row each second, then the figures. */
        Result measure(long t0) throws InterruptedException {
            Counter counted = consumed != null ? consumed : acked;
            MachineCpu.Window cpu = new MachineCpu.Window(duration.toSeconds(), processes);
            measureFrom.set(t0);
            end.set(t0 + duration.toNanos());
            long lastCount = 0;
            long lastBytes = 0;
            for (int s = 1; s <= duration.toSeconds(); s++) {
                PipelineBench.sleepUntil(t0 + s * 1_000_000_000L);
                long c = counted.records.get();
                long b = counted.bytes.get();
                cpu.endOf(s, b / 1e6);
                out.row(name, s, c - lastCount, BenchOutput.round((b - lastBytes) / 1e6), 0L);
                lastCount = c;
                lastBytes = b;
            }
            joinThreads();
            producer.flush();
            if (failed.get() > 0) {
                out.note(name + " phase: " + failed.get() + " sends failed");
            }
            if (counted.records.get() == 0) {
                throw new IllegalStateException(name + " phase: nothing " + (consumed != null ? "consumed" : "acknowledged")
                        + " in the measured window (" + failed.get() + " sends failed)");
            }
            double seconds = (counted.last.get() - t0) / 1e9;
            double ackedSeconds = Math.max(1e-9, (acked.last.get() - t0) / 1e9);
            return new Result(counted.records.get() / seconds, counted.bytes.get() / 1e6 / seconds,
                    acked.bytes.get() / 1e6 / ackedSeconds, failed.get(), cpu, true);
        }

        private void joinThreads() throws InterruptedException {
            for (Thread t : threads) {
                t.join();
            }
        }

        @Override
        public void close() throws InterruptedException {
            end.set(0); // stops the threads (the consumer within a poll) if measure() did not run to its end
            joinThreads();
            producer.close();
        }
    }

    /** "broker 2.1, node 2.0, load 1.1": each process's CPU ms per MB. */
    static String byProcess(MachineCpu.Window cpu) {
        return cpu.processMsPerMb().entrySet().stream()
                .map(e -> String.format("%s %.1f", e.getKey(), e.getValue())).collect(Collectors.joining(", "));
    }
}
