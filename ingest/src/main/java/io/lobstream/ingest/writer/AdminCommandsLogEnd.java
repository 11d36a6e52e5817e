package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@link CommandsLogEnd} asked of the brokers, with an admin client made at the first question: a node asks only for a
 * partition quiet for {@code lob.upload.timeout.ms} with an upload in progress, once per housekeeping at most.
 */
public final class AdminCommandsLogEnd implements CommandsLogEnd, AutoCloseable {
    /** How long the admin client tries; no answer means no expiry by the clock this time. */
    static final Duration TIMEOUT = Duration.ofSeconds(10);

    private static final Logger log = LoggerFactory.getLogger(AdminCommandsLogEnd.class);
    private static final long WARN_EVERY_MS = 60_000;

    private final LobStreamConfig config;
    private final LazyAdmin admin;
    private final AtomicLong lastWarning = new AtomicLong();

    public AdminCommandsLogEnd(LobStreamConfig config) {
        this.config = config;
        this.admin = new LazyAdmin(config);
    }

    @Override
    public CompletableFuture<OptionalLong> endOffset(int partition) {
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        CompletableFuture<OptionalLong> answer = new CompletableFuture<>();
        try {
            // read_uncommitted: the records of a transaction still open wait too (their times are earlier than its commit)
            admin.get().listOffsets(Map.of(tp, OffsetSpec.latest()),
                            new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED).timeoutMs((int) TIMEOUT.toMillis()))
                    .partitionResult(tp)
                    .whenComplete((info, e) -> {
                        if (e != null) {
                            unanswered(tp, e);
                        }
                        answer.complete(e == null ? OptionalLong.of(info.offset()) : OptionalLong.empty());
                    });
        } catch (RuntimeException closedOrNotMade) {
            unanswered(tp, closedOrNotMade);
            answer.complete(OptionalLong.empty());
        }
        return answer;
    }

    /** Said once a minute at most: while the brokers do not answer, idle uploads of quiet partitions do not expire. */
    private void unanswered(TopicPartition tp, Throwable e) {
        long now = System.currentTimeMillis();
        long last = lastWarning.get();
        if (!admin.closed() && now - last >= WARN_EVERY_MS && lastWarning.compareAndSet(last, now)) {
            log.warn("cannot read where {} ends ({}): an upload idle there expires when the next command comes, not by the "
                    + "clock", tp, e.toString());
        }
    }

    @Override
    public void close() {
        admin.close();
    }
}
