package io.lobstream.purge;

import io.lobstream.store.index.VersionEntry;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The worker's transactions when Kafka refuses a step, on Kafka's mock clients and a real
 * tablespace: whatever fails, the worker goes on, every undo record's reclaim is committed once,
 * with its offset, and nothing of a failed transaction is committed.
 */
@Timeout(60)
class PurgeWorkerTransactionsTest {
    private static final TopicPartition UNDO_0 = new TopicPartition(PurgeFixture.UNDO_TOPIC, 0);
    private static final int VERSIONS = 3;

    @TempDir
    Path dataDir;
    private PurgeFixture f;
    /** As Kafka's: the offsets committed are those the last producer's committed transaction sent. */
    private final MockConsumer<String, byte[]> consumer = new MockConsumer<>("earliest") {
        @Override
        public synchronized Map<TopicPartition, OffsetAndMetadata> committed(Set<TopicPartition> partitions, Duration timeout) {
            Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();
            for (MockProducer<String, Object> p : producers) {
                p.consumerGroupOffsetsHistory().forEach(byGroup -> byGroup.values().forEach(committed::putAll));
            }
            committed.keySet().retainAll(partitions);
            return committed;
        }
    };
    /** Every producer the worker took, in order. */
    private final List<MockProducer<String, Object>> producers = new CopyOnWriteArrayList<>(); // the worker adds, the test reads
    private final List<ConsumerRecord<String, byte[]>> undoRecords = new ArrayList<>();
    private Supplier<Producer<String, Object>> newProducer;
    private PurgeWorker worker;
    private Thread thread;

    @BeforeEach
    void open() throws IOException {
        f = new PurgeFixture(dataDir);
        for (int i = 0; i < VERSIONS; i++) {
            VersionEntry old = f.supersede("lob-" + i, 20_000);
            undoRecords.add(PurgeFixture.record(i, PurgeFixture.encode(f.undo(old).build())));
        }
        f.store.flush(); // the pages on disk, where the worker's reader finds them
        consumer.updateBeginningOffsets(Map.of(UNDO_0, 0L));
        newProducer = () -> {
            MockProducer<String, Object> p = new MockProducer<>(false, null, (topic, key) -> new byte[0], (topic, value) -> new byte[0]);
            producers.add(p);
            return p;
        };
        worker = worker(Duration.ofMinutes(1));
    }

    private PurgeWorker worker(Duration transactionBudget) {
        return new PurgeWorker("w1", "lobstream-purge-w1", PurgeFixture.UNDO_TOPIC, consumer, newProducer, transactionBudget, f.readers,
                f.purger, f.metrics, () -> Set.of(0), null);
    }

    @AfterEach
    void close() throws Exception {
        if (thread != null) {
            worker.close();
            thread.join(10_000);
            assertThat(thread.isAlive()).as("the worker ended on close").isFalse();
        }
        f.close();
    }

    /** As a pool does with the workers it made when a later one cannot be made, or `lobstream purge` when its port is taken. */
    @Test
    void aWorkerClosedBeforeItRanLetsGoOfItsClients() {
        worker.close();
        assertThat(consumer.closed()).isTrue();
        assertThat(producers).singleElement().satisfies(p -> assertThat(p.closed()).isTrue());
        worker.run(); // returns at once: there is nothing to run
        assertThat(producers).hasSize(1);
    }

    @Test
    void aFencedProducerIsReplacedAndTheRecordsItDidNotCommitArePurgedByTheNext() {
        consumer.schedulePollTask(() -> {
            deliverUndoRecords();
            producers.get(0).fenceProducer(); // its transaction outlived transaction.timeout.ms, say
        });
        consumer.schedulePollTask(this::deliverUndoRecords); // read again from the committed offset: none, so the beginning

        start();

        await().atMost(Duration.ofSeconds(30)).until(() -> producers.size() == 2 && producers.get(1).commitCount() == 1);
        assertThat(producers.get(0).closed()).isTrue();
        assertThat(producers.get(0).history()).isEmpty();
        assertCommittedOnce(producers.get(1));
        assertThat(thread.isAlive()).as("a fence does not end the worker").isTrue();
    }

    @Test
    void aProducerFencedAtItsCommitIsReplaced() {
        producers.get(0).commitTransactionException = new ProducerFencedException("fenced at the commit");
        assertTheNextProducerPurges();
    }

    @Test
    void aProducerThatRefusesToAbortIsReplaced() {
        // taken in the constructor: the mock is there to set up before the worker runs
        producers.get(0).commitTransactionException = new KafkaException("commit refused");
        producers.get(0).abortTransactionException = new KafkaException("abort refused");
        assertTheNextProducerPurges();
    }

    /** Runs the worker on the undo records, read twice: the first producer, set up to fail, commits nothing; the next all. */
    private void assertTheNextProducerPurges() {
        consumer.schedulePollTask(this::deliverUndoRecords);
        consumer.schedulePollTask(this::deliverUndoRecords);

        start();

        await().atMost(Duration.ofSeconds(30)).until(() -> producers.size() == 2 && producers.get(1).commitCount() == 1);
        assertThat(producers.get(0).closed()).isTrue();
        assertThat(producers.get(0).history()).isEmpty();
        assertCommittedOnce(producers.get(1));
    }

    @Test
    void anAbortedTransactionIsReadAgainWithTheSameProducer() {
        refuseOffsetsThenCommit(1, new KafkaException("offsets refused")); // then the coordinator is back
        assertThat(producers).hasSize(1);
        assertCommittedOnce(producers.get(0));
        assertThat(f.metrics.failures.count()).isEqualTo(1);
    }

    /**
     * A transaction whose offsets the group refused for an old generation (a cooperative rebalance began while it ran)
     * is read again at once, and is no failure: each member busy as a rebalance starts has one.
     */
    @Test
    void aTransactionOutrunByARebalanceIsReadAgainAndIsNoFailure() {
        // then the worker has joined the new generation
        refuseOffsetsThenCommit(1, new KafkaException("Cannot execute transactional method because we are in an error state",
                new CommitFailedException("Transaction offset Commit failed due to consumer group metadata mismatch: ILLEGAL_GENERATION")));
        assertThat(producers).hasSize(1);
        assertCommittedOnce(producers.get(0));
        assertThat(f.metrics.failures.count()).isZero();
    }

    /** Three in a row is no rebalance (a worker dropped from the group at every turn): a failure, counted. */
    @Test
    void transactionsOutrunAgainAndAgainAreFailures() {
        refuseOffsetsThenCommit(3, new CommitFailedException("UNKNOWN_MEMBER_ID"));
        assertCommittedOnce(producers.get(0));
        assertThat(f.metrics.failures.count()).isEqualTo(1);
    }

    /** A record skipped in a transaction that aborted (undecodable, here) is counted once: when the one that reads it again commits. */
    @Test
    void aRecordSkippedInAnAbortedTransactionIsCountedOnce() {
        undoRecords.add(PurgeFixture.record(VERSIONS, "not avro".getBytes(StandardCharsets.UTF_8)));
        refuseOffsetsThenCommit(1, new KafkaException("offsets refused"));
        assertThat(f.metrics.failures.count()).isEqualTo(1);
        assertThat(f.metrics.corrupt.count()).isEqualTo(1);
    }

    /**
     * Runs the worker on the undo records until the first producer commits: its offsets refused with {@code refusal} for
     * the first {@code refused} polls of them, taken at the next.
     */
    private void refuseOffsetsThenCommit(int refused, RuntimeException refusal) {
        for (int i = 0; i < refused; i++) {
            consumer.schedulePollTask(this::deliverUndoRecords);
        }
        consumer.schedulePollTask(() -> {
            producers.get(0).sendOffsetsToTransactionException = null;
            deliverUndoRecords();
        });
        producers.get(0).sendOffsetsToTransactionException = refusal;

        start();

        await().atMost(Duration.ofSeconds(30)).until(() -> producers.get(0).commitCount() == 1);
    }

    /**
     * A transaction that has purged for its budget (half of transaction.timeout.ms) commits what it has, before the
     * coordinator would abort it, and leaves the rest of its poll to the next. With no budget at all: one version
     * per transaction, each with its offset.
     */
    @Test
    void aTransactionPastItsBudgetCommitsWhatItHasAndTheRestComesAgain() {
        producers.clear(); // the worker made before each test never runs (closing it would wake the shared consumer)
        worker = worker(Duration.ZERO);
        for (int i = 0; i < VERSIONS; i++) {
            consumer.schedulePollTask(this::deliverUndoRecords); // a poll returns those at or past the position
        }

        start();

        await().atMost(Duration.ofSeconds(30)).until(() -> producers.get(0).commitCount() == VERSIONS);
        MockProducer<String, Object> producer = producers.get(0);
        assertThat(producer.history()).hasSize(VERSIONS);
        assertThat(producer.consumerGroupOffsetsHistory()).extracting(o -> o.values().iterator().next().get(UNDO_0).offset())
                .containsExactly(1L, 2L, 3L);
        assertThat(f.metrics.failures.count()).isZero();
    }

    /**
     * A writer killed while it produced undo records again: its transaction aborted, and a read_committed poll moves past
     * its records and marker returning nothing. The position is committed all the same, or the group's lag would stay.
     */
    @Test
    void aPositionPastRecordsNoPollReturnedIsCommitted() {
        consumer.schedulePollTask(() -> consumer.seek(UNDO_0, 4)); // three aborted records and their marker

        start();

        await().atMost(Duration.ofSeconds(30)).until(() -> producers.get(0).commitCount() == 1);
        assertThat(producers.get(0).history()).isEmpty();
        assertThat(producers.get(0).consumerGroupOffsetsHistory()).singleElement()
                .satisfies(byGroup -> assertThat(byGroup.values()).singleElement().isEqualTo(Map.of(UNDO_0, new OffsetAndMetadata(4))));
    }

    /**
     * A partition whose tablespace is not in the worker's data directory is held back, its records unconsumed: the
     * worker's meters tell that from an idle worker, which holds no partition.
     */
    @Test
    void aPartitionHeldBackForWantOfItsTablespaceIsShownApartFromAnIdleWorker() {
        TopicPartition undo1 = new TopicPartition(PurgeFixture.UNDO_TOPIC, 1);
        consumer.updateBeginningOffsets(Map.of(undo1, 0L));
        worker = new PurgeWorker("w1", "lobstream-purge-w1", PurgeFixture.UNDO_TOPIC, consumer, newProducer, Duration.ofMinutes(1),
                f.readers, f.purger, f.metrics, () -> Set.of(0, 1), null);
        ConsumerRecord<String, byte[]> first = undoRecords.get(0);
        consumer.schedulePollTask(() -> {
            deliverUndoRecords();
            consumer.addRecord(new ConsumerRecord<>(undo1.topic(), 1, 0, first.key(), first.value()));
        });

        start();

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            assertThat(gauge("lob_purge_partitions")).isEqualTo(2);
            assertThat(gauge("lob_purge_partitions_held")).as("partition 1: no tablespace here").isEqualTo(1);
        });
        MockProducer<String, Object> producer = producers.get(1); // the first is the worker open() made, never run
        await().atMost(Duration.ofSeconds(30)).until(() -> producer.commitCount() == 1);
        assertCommittedOnce(producer);
    }

    private double gauge(String name) {
        return f.meters.get(name).tag("worker", "w1").gauge().value();
    }

    private void start() {
        thread = new Thread(worker, "purge-w1");
        thread.start();
    }

    /** The partition's undo records, as a poll after a seek to the beginning returns them. */
    private void deliverUndoRecords() {
        undoRecords.forEach(consumer::addRecord);
    }

    /** One reclaim per version, and the offset past the last undo record, committed in one transaction. */
    private void assertCommittedOnce(MockProducer<String, Object> producer) {
        assertThat(producer.history()).hasSize(VERSIONS);
        assertThat(producer.consumerGroupOffsetsHistory()).hasSize(1);
        Map<TopicPartition, OffsetAndMetadata> offsets = producer.consumerGroupOffsetsHistory().get(0).values().iterator().next();
        assertThat(offsets).containsEntry(UNDO_0, new OffsetAndMetadata(VERSIONS));
    }
}
