package io.lobstream.client;

import io.lobstream.avro.LobOp;
import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serializer;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A write of many records stops at the first that failed, and says what was sent: here no broker
 * answers, so the first send is refused after {@code max.block.ms} (the producer fails it at once, having no
 * metadata), and nothing was sent. Sending on, a put of 100 chunks would
 * take 100 times as long only to fail the same way (with 512 KiB chunks and a dead broker, a
 * 1 GiB put crawled on for many minutes). Kafka's failure fails the returned write, as a
 * producer's future; bad arguments are refused before anything is sent.
 */
class LobClientTest {
    private static final int CHUNKS = 100;

    @Test
    void aPutStopsAtTheFirstChunkThatFailed() throws IOException {
        try (LobClient client = new LobClient(unreachable())) {
            byte[] value = new byte[CHUNKS * 1024];
            LobWrite write = client.put("doc", new ByteArrayInputStream(value), value.length, null, LobClient.Progress.NONE);
            assertThat(write).failsWithin(Duration.ofSeconds(30)).withThrowableOfType(ExecutionException.class)
                    .havingCause().isInstanceOf(IOException.class)
                    .withMessageContaining("put doc: stopped after 0 of " + CHUNKS + " chunks, as chunk 1 was refused")
                    .withMessageContaining("the LOB is unchanged");
        }
    }

    @Test
    void anAppendStopsAtTheFirstPieceThatFailedAndSaysWhatMayBeApplied() throws IOException {
        try (LobClient client = new LobClient(unreachable())) {
            byte[] data = new byte[CHUNKS * 1024];
            LobWrite write = client.append("log", new ByteArrayInputStream(data), data.length, LobClient.Progress.NONE);
            assertThat(write).failsWithin(Duration.ofSeconds(30)).withThrowableOfType(ExecutionException.class)
                    .havingCause().isInstanceOf(IOException.class)
                    .withMessageContaining("append log: stopped at byte 0 of " + data.length + ", as its piece was refused")
                    .withMessageContaining("nothing of it was sent: the LOB is unchanged");
        }
    }

    /** Told to stop (the CLI's Ctrl-C) before its first record: nothing was sent, and there is no upload to abort. */
    @Test
    void aWriteToldToStopBeforeItsFirstRecordSaysNothingWasSent() throws IOException {
        try (LobClient client = new LobClient(unreachable())) {
            client.stopSending("stopped by a test");
            byte[] value = new byte[CHUNKS * 1024];
            assertThat(client.put("doc", new ByteArrayInputStream(value), value.length, null, LobClient.Progress.NONE))
                    .failsWithin(Duration.ofSeconds(30)).withThrowableOfType(ExecutionException.class).havingCause()
                    .withMessageContaining("put doc: stopped after 0 of " + CHUNKS + " chunks, as the client was told to stop; "
                            + "nothing was sent: the LOB is unchanged");
            assertThat(client.append("log", new ByteArrayInputStream(value), value.length, LobClient.Progress.NONE))
                    .failsWithin(Duration.ofSeconds(30)).withThrowableOfType(ExecutionException.class).havingCause()
                    .withMessageContaining("append log: stopped at byte 0 of " + value.length + ", as the client was told to "
                            + "stop; nothing of it was sent");
            assertThat(client.delete("doc")).failsWithin(Duration.ofSeconds(30)).withThrowableOfType(ExecutionException.class)
                    .havingRootCause().isInstanceOf(WriteStoppedException.class);
        }
    }

    /** A write's pieces all sent, two failing: the write names the first in their order, not whichever failed first. */
    @Test
    void theFirstPieceThatFailedInTheOrderSentIsTheOneNamed() {
        List<CompletableFuture<String>> sent = List.of(new CompletableFuture<>(), new CompletableFuture<>(), new CompletableFuture<>());
        sent.get(2).completeExceptionally(new IllegalStateException("third"));
        sent.get(0).complete("first");
        sent.get(1).completeExceptionally(new IllegalStateException("second"));
        assertThat(LobClient.firstFailed(sent).getKey()).isEqualTo(1);
        assertThat(LobClient.firstFailed(sent).getValue()).hasMessage("second");
    }

    @Test
    void badArgumentsAreRefusedBeforeAnythingIsSent() throws IOException {
        try (LobClient client = new LobClient(unreachable().with(LobStreamConfig.VALUE_MAX_BYTES.name(), 1000))) {
            assertThatThrownBy(() -> client.put("doc", new byte[1001], null))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("over lob.value.max.bytes (1000)");
            assertThatThrownBy(() -> client.put("doc", new ByteArrayInputStream(new byte[0]), -1, null, LobClient.Progress.NONE))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative length");
            assertThatThrownBy(() -> client.write("doc", -5, new ByteArrayInputStream(new byte[1]), 1, LobClient.Progress.NONE))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative offset -5");
            // a write or append that makes the value at least that long: refused whole, not applied up to the limit
            assertThatThrownBy(() -> client.write("doc", 600, new ByteArrayInputStream(new byte[401]), 401, LobClient.Progress.NONE))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("write doc: the value would reach at least 1001 bytes, over lob.value.max.bytes (1000)");
            assertThatThrownBy(() -> client.append("doc", new ByteArrayInputStream(new byte[1001]), 1001, LobClient.Progress.NONE))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("over lob.value.max.bytes (1000)");
            assertThatThrownBy(() -> client.write("doc", Long.MAX_VALUE, new ByteArrayInputStream(new byte[1]), 1, LobClient.Progress.NONE))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("would reach at least 9223372036854775808 bytes");
            assertThatThrownBy(() -> client.truncate("doc", -1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative length");
            // a HashMap's null: an NPE from deep inside the header checks
            Map<String, String> withNull = new java.util.HashMap<>();
            withNull.put("owner", null);
            assertThatThrownBy(() -> client.put("doc", new byte[1], null, withNull))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("null key or value");
        }
    }

    /** A value serializer, made before the producer, that counts its closes. */
    public static final class CountingSerializer implements Serializer<Object> {
        static final AtomicInteger CLOSED = new AtomicInteger();

        @Override
        public byte[] serialize(String topic, Object data) {
            return new byte[0];
        }

        @Override
        public void close() {
            CLOSED.incrementAndGet();
        }
    }

    /** Refused by the producer before it owned it, the value serializer (the registry's client) was left open. */
    @Test
    void aProducerSettingRefusedClosesTheValueSerializer() {
        int before = CountingSerializer.CLOSED.get();
        assertThatThrownBy(() -> new LobClient(unreachable().with(LobStreamConfig.VALUE_SERIALIZER.name(), CountingSerializer.class.getName())
                .with("lob.producer.retries", 0))).isInstanceOf(org.apache.kafka.common.config.ConfigException.class);
        assertThat(CountingSerializer.CLOSED.get()).isGreaterThan(before);
    }

    @Test
    void anIdempotentWriteSendsTheSameIdsEveryTimeAndNoOtherWriteSendsThem() throws IOException {
        CommandIds put = new CommandIds("job-1", "doc", LobOp.PUT);
        assertThat(put.commandId(2)).isEqualTo(new CommandIds("job-1", "doc", LobOp.PUT).commandId(2)).isNotEqualTo(put.commandId(1));
        assertThat(put.uploadId()).isEqualTo(new CommandIds("job-1", "doc", LobOp.PUT).uploadId());
        assertThat(put.commandId(0)).isNotEqualTo(new CommandIds("job-1", "doc2", LobOp.PUT).commandId(0))
                .isNotEqualTo(new CommandIds("job-1", "doc", LobOp.DELETE).commandId(0))
                .isNotEqualTo(new CommandIds("job-", "1doc", LobOp.PUT).commandId(0)); // the parts are not just joined
        CommandIds fresh = CommandIds.fresh("doc", LobOp.PUT);
        assertThat(fresh.commandId(0)).isNotEqualTo(fresh.commandId(0));
        try (LobClient client = new LobClient(unreachable())) {
            assertThatThrownBy(() -> client.idempotent("")).isInstanceOf(IllegalArgumentException.class);
            LobWrites once = client.idempotent("job-2");
            assertThatThrownBy(() -> once.append("doc", InputStream.nullInputStream(), -1, LobClient.Progress.NONE)).as("refused before anything is sent: the key stays unspent")
                    .isInstanceOf(IllegalArgumentException.class);
            once.truncate("doc", 0);
            assertThatThrownBy(() -> once.delete("doc")).as("one write per key").isInstanceOf(IllegalStateException.class);
        }
    }

    /**
     * An input that fails with an unchecked exception (an adapter's UncheckedIOException) fails as one that throws an
     * IOException: the input's failure, which an upload or a write answers by saying what was sent, not a bare exception.
     */
    @Test
    void anInputFailingUncheckedIsTheInputsFailure() throws IOException {
        java.io.InputStream failing = new java.io.InputStream() {
            @Override
            public int read() {
                throw new java.io.UncheckedIOException(new IOException("connection reset"));
            }
        };
        try (LobClient client = new LobClient(unreachable())) {
            assertThatThrownBy(() -> client.put("doc", failing, 10, null, LobClient.Progress.NONE)).isInstanceOf(IOException.class)
                    .hasMessageContaining("reading the input failed after 0 of 10 bytes").hasMessageContaining("connection reset");
        }
    }

    /** A progress callback that throws is told, not obeyed: the call still returns the write its records belong to. */
    @Test
    void aProgressCallbackThatThrowsDoesNotLoseTheWrite() throws IOException {
        try (LobClient client = new LobClient(unreachable())) {
            LobWrite write = client.put("doc", new ByteArrayInputStream(new byte[10]), 10, null, sent -> {
                throw new IllegalStateException("cancelled");
            });
            assertThat(write.lobId()).isEqualTo("doc");
        }
    }

    /** The client's default batch.size kept within a smaller buffer.memory (half), where it would fail every send; a given one kept; a buffer too small for a chunk refused. */
    @Test
    void theDefaultBatchFitsASmallerBufferMemory() throws IOException {
        assertThat(LobClient.producerSettings(unreachable().with("lob.producer.buffer.memory", 900_000)))
                .containsEntry("batch.size", 450_000);
        assertThat(LobClient.producerSettings(unreachable().with("lob.producer.buffer.memory", 900_000)
                .with("lob.producer.batch.size", 2_000_000))).containsEntry("batch.size", 2_000_000);
        assertThatThrownBy(() -> new LobClient(unreachable().with("lob.chunk.size", 524_288).with("lob.producer.buffer.memory", 500_000)))
                .hasMessageContaining("does not fit buffer.memory=500000");
        // a chunk's command carries its LOB id twice (key and field) and the last one's metadata: 16 KiB of room was too little
        assertThatThrownBy(() -> LobClient.checkSettings(unreachable().with("lob.chunk.size", 524_288)
                .with("lob.producer.max.request.size", 524_288 + 16 * 1024))).hasMessageContaining("does not fit max.request.size");
        try (LobClient client = new LobClient(unreachable())) {
            client.close(Duration.ofMillis(-1)); // taken as 0: the producer closes, where it refused and stayed open
            assertThatThrownBy(() -> client.put("doc", new ByteArrayInputStream(new byte[10]), 10, null, LobClient.Progress.NONE))
                    .isInstanceOf(IllegalStateException.class).hasMessage("LobClient closed");
        }
    }

    /**
     * A broker away when a client's first {@code applied()} starts its tracker: the write Kafka acknowledged waits for its
     * outcome (the tracker's rounds ask for the dead-letter topic again), where it failed with Kafka's timeout.
     */
    @Test
    void aBrokerAwayWhenTheTrackerStartsLeavesOutcomesWaitingNotFailed() throws Exception {
        CompletableFuture<WriteOutcome> outcome = new CompletableFuture<>();
        try (AppliedTracker tracker = new AppliedTracker(unreachable(), "w/", 10, Runnable::run, Duration.ofMillis(300), () -> false)) {
            tracker.track(new LobWrite(null, "doc", "w/1", System.currentTimeMillis()),
                    new RecordMetadata(new TopicPartition("lob.commands", 0), 5, 0, 0, 3, 10), outcome);
            Thread.sleep(2_000);
            assertThat(outcome).isNotDone();
        }
        assertThat(outcome).failsWithin(Duration.ofSeconds(30)).withThrowableOfType(ExecutionException.class)
                .withMessageContaining("LobClient closed before the writer committed the write");
    }

    /**
     * A close while the first {@code applied()} makes the tracker, the broker away: it does not wait out the making's wait
     * for the dead-letter topic. The maker closes what it made and is told the client closed.
     */
    @Test
    void aCloseWhileTheTrackerIsMadeDoesNotWaitForTheMaking() throws Exception {
        LobClient client = new LobClient(unreachable());
        // far past the 60 s given below: a maker that ignored the close would still wait here, not fail of its own wait
        client.trackerPartitionsWait = Duration.ofMinutes(10);
        CompletableFuture<Void> watched = new CompletableFuture<>();
        Thread maker = new Thread(() -> {
            try {
                client.watchApplied();
                watched.complete(null);
            } catch (RuntimeException e) {
                watched.completeExceptionally(e);
            }
        }, "tracker-maker");
        maker.start();
        // until the maker is in the making (waiting for the dead-letter topic's partitions), not a time guessed
        long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (Arrays.stream(maker.getStackTrace()).noneMatch(f -> f.getClassName().equals(AppliedTracker.class.getName()))) {
            assertThat(System.nanoTime()).as("the maker reaches the tracker's making").isLessThan(until);
            Thread.sleep(10);
        }
        client.close(Duration.ZERO);
        assertThat(watched).isNotDone();
        assertThat(watched).failsWithin(Duration.ofSeconds(60)).withThrowableOfType(ExecutionException.class)
                .havingCause().isInstanceOf(IllegalStateException.class).withMessage("LobClient closed");
    }

    /**
     * As a closed KafkaProducer has run every callback: once close returns, a write's stages have run. A write begun
     * after the close is refused at once, before its input is read, as KafkaProducer.send refuses one.
     */
    @Test
    void aCloseWaitsForTheWritesStagesAndRefusesLaterWrites() throws Exception {
        LobClient client = new LobClient(unreachable());
        CountDownLatch stageBegan = new CountDownLatch(1);
        AtomicBoolean stageEnded = new AtomicBoolean();
        AtomicBoolean onCallbackThread = new AtomicBoolean();
        // as the client completes its writes: on its callback threads (a write completed by Kafka takes the same way)
        LobWrite write = new LobWrite(client, "doc", "w/1", System.currentTimeMillis());
        write.whenCompleteAsync((md, failed) -> {
            onCallbackThread.set(Thread.currentThread().getName().startsWith("lobstream-client-callbacks"));
            stageBegan.countDown();
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            stageEnded.set(true);
        }, client.callbacks());
        write.complete(new RecordMetadata(new TopicPartition("lob.commands", 0), 0, 0, 0, 3, 10));
        assertThat(stageBegan.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(onCallbackThread).as("the stage runs on a callback thread, which close waits for").isTrue();
        client.close();
        assertThat(stageEnded).as("the stage ran to its end before close returned").isTrue();
        InputStream unread = new ByteArrayInputStream(new byte[10]);
        assertThatThrownBy(() -> client.put("doc", unread, 10, null, LobClient.Progress.NONE))
                .isInstanceOf(IllegalStateException.class).hasMessage("LobClient closed");
        assertThat(unread.available()).as("refused before the input was read").isEqualTo(10);
        assertThatThrownBy(() -> client.delete(null)).isInstanceOf(IllegalStateException.class);
    }

    /**
     * The first applied() makes the tracker on a callback thread, which close waits for: with the broker away, the making
     * asks for the dead-letter topic a second at a time and gives up once the close began, not after its whole wait.
     */
    @Test
    void aCloseDoesNotWaitOutTheTrackersMakingOnACallbackThread() throws Exception {
        LobClient client = new LobClient(unreachable());
        client.trackerPartitionsWait = Duration.ofSeconds(60);
        LobWrite write = new LobWrite(client, "doc", "w/1", System.currentTimeMillis());
        write.complete(new RecordMetadata(new TopicPartition("lob.commands", 0), 0, 0, 0, 3, 10));
        CompletableFuture<WriteOutcome> outcome = write.applied();
        long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (Thread.getAllStackTraces().entrySet().stream().noneMatch(t -> t.getKey().getName().startsWith("lobstream-client-callbacks")
                && Arrays.stream(t.getValue()).anyMatch(f -> f.getClassName().equals(AppliedTracker.class.getName())))) {
            assertThat(System.nanoTime()).as("a callback thread makes the tracker").isLessThan(until);
            Thread.sleep(10);
        }
        long closing = System.nanoTime();
        client.close();
        assertThat(Duration.ofNanos(System.nanoTime() - closing)).as("not the making's whole wait")
                .isLessThan(client.trackerPartitionsWait.dividedBy(4));
        assertThat(outcome).failsWithin(Duration.ofSeconds(30)).withThrowableOfType(ExecutionException.class)
                .withMessageContaining("LobClient closed");
    }

    /** A null lobId is a bad argument, as an empty one is, not a NullPointerException. */
    @Test
    void aNullLobIdIsRefusedAsABadArgument() throws IOException {
        try (LobClient client = new LobClient(unreachable())) {
            assertThatThrownBy(() -> client.delete(null)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("the lobId must not be null");
            assertThatThrownBy(() -> client.put(null, new byte[1], null)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    /** A null value is the caller's mistake, not an input that failed (an IOException), nor an empty value. */
    @Test
    void aNullValueIsRefusedAsABadArgument() throws IOException {
        try (LobClient client = new LobClient(unreachable())) {
            assertThatThrownBy(() -> client.put("doc", (byte[]) null, null)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("put doc: the value must not be null");
            assertThatThrownBy(() -> client.put("doc", null, 0, null, LobClient.Progress.NONE)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> client.put("doc", null, 10, null, LobClient.Progress.NONE)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> client.append("doc", null, 10, LobClient.Progress.NONE)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("append doc: the value must not be null");
        }
    }

    /** A stopped client reads none of a one-record put's input, as none of a chunked put's. */
    @Test
    void aStoppedClientLeavesAOneRecordPutsInputUnread() throws IOException {
        try (LobClient client = new LobClient(unreachable())) {
            client.stopSending("stopped by a test");
            ByteArrayInputStream in = new ByteArrayInputStream(new byte[100]);
            assertThat(client.put("doc", in, 100, null, LobClient.Progress.NONE)).failsWithin(Duration.ofSeconds(30))
                    .withThrowableOfType(ExecutionException.class).havingRootCause().isInstanceOf(WriteStoppedException.class);
            assertThat(in.available()).isEqualTo(100);
        }
    }

    /** A close after a close (try-with-resources after an explicit one) closes the producer, and so its serializer, once. */
    @Test
    void aSecondCloseDoesNotCloseTheProducerAgain() throws IOException {
        LobClient client = new LobClient(unreachable().with(LobStreamConfig.VALUE_SERIALIZER.name(), CountingSerializer.class.getName()));
        int before = CountingSerializer.CLOSED.get();
        client.close(Duration.ofSeconds(5));
        client.close();
        assertThat(CountingSerializer.CLOSED.get()).isEqualTo(before + 1);
    }

    /**
     * An applied() that timed out says what it waited for: the writer group, the partition and the offset (a client of
     * another lob.writer.application.id than the nodes' waits for ever). Cancelling a write, as Kafka users do after a
     * get that timed out, changes nothing, as on Kafka's send future.
     */
    @Test
    void anAppliedThatTimesOutNamesTheGroupAndOffsetItWaitedFor() throws Exception {
        try (LobClient client = new LobClient(unreachable())) {
            client.trackerPartitionsWait = Duration.ofMillis(300);
            LobWrite write = new LobWrite(client, "doc", "w/1", System.currentTimeMillis());
            assertThat(write.cancel(true)).isFalse();
            assertThat(write).isNotDone();
            write.complete(new RecordMetadata(new TopicPartition("lob.commands", 3), 41, 0, 0, 3, 10));
            assertThat(write.applied(Duration.ofSeconds(1))).failsWithin(Duration.ofSeconds(30))
                    .withThrowableOfType(ExecutionException.class).havingCause().isInstanceOf(TimeoutException.class)
                    .withMessage("write w/1 to doc not applied within 1 s: writer group " + client.writerGroup() + " has not "
                            + "committed past lob.commands-3 offset 41 (is a writer node of that group running, with this "
                            + "lob.writer.application.id?)");

            // not acknowledged yet when the wait ends: the message says that, not a bare TimeoutException
            LobWrite unacknowledged = new LobWrite(client, "doc", "w/2", System.currentTimeMillis());
            assertThat(unacknowledged.applied(Duration.ofMillis(200))).failsWithin(Duration.ofSeconds(30))
                    .withThrowableOfType(ExecutionException.class).havingCause().isInstanceOf(TimeoutException.class)
                    .withMessageStartingWith("write w/2 to doc not acknowledged by Kafka within 200 ms");
        }
    }

    /** 1 KiB chunks, sends that give up after 200 ms, and a broker address where nothing listens. */
    private static LobStreamConfig unreachable() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        return new LobStreamConfig(Map.of(LobStreamConfig.BOOTSTRAP.name(), "127.0.0.1:" + port,
                LobStreamConfig.CHUNK_SIZE.name(), 1024, "max.block.ms", 200));
    }
}
