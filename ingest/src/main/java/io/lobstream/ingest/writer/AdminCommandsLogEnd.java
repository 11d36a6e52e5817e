package io.lobstream.ingest.writer;

import io.lobstream.schema.LobStreamConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@link CommandsLogEnd} asked of the brokers, with an admin client made at the first question: a node asks only for a
 * partition quiet for {@code lob.upload.timeout.ms} with an upload in progress, on the partition's stream thread.
 */
public final class AdminCommandsLogEnd implements CommandsLogEnd, AutoCloseable {
    /** How long a stream thread waits for the answer: one round trip, normally; no answer means no expiry by the clock. */
    static final Duration TIMEOUT = Duration.ofSeconds(2);

    private final LobStreamConfig config;
    private Admin admin;
    private boolean closed;

    public AdminCommandsLogEnd(LobStreamConfig config) {
        this.config = config;
    }

    @Override
    public OptionalLong endOffset(int partition) {
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        try {
            // read_uncommitted: records of a transaction still open wait too (their times are earlier than its commit)
            return OptionalLong.of(admin().listOffsets(Map.of(tp, OffsetSpec.latest()),
                            new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED).timeoutMs((int) TIMEOUT.toMillis()))
                    .partitionResult(tp).get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).offset());
        } catch (ExecutionException | TimeoutException | IllegalStateException e) {
            return OptionalLong.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return OptionalLong.empty();
        }
    }

    private synchronized Admin admin() {
        if (closed) {
            throw new IllegalStateException("closed");
        }
        if (admin == null) {
            admin = Admin.create(config.clientConfig(AdminClientConfig.configNames()));
        }
        return admin;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (admin != null) {
            admin.close(Duration.ofSeconds(1));
        }
    }
}
