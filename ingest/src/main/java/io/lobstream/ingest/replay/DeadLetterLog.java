package io.lobstream.ingest.replay;

import io.lobstream.ingest.writer.TablespaceCheck;
import io.lobstream.schema.DeadLetterTopic;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.schema.Topics;
import io.lobstream.store.index.Rejection;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.zip.CRC32C;

/**
 * Which commands of one partition of {@code lob.commands} the writer dead-lettered, as far as
 * {@code lob.commands.dlq} still says. A replay asks it twice. When a command does not decode: the
 * writer dead-letters such a command too, so a replay that finds no letter for a command the writer
 * has decided is reading another registry than the writer did (restored from an older backup, or
 * the wrong one) or with another deserializer, and would leave out commands the writer applied.
 * And when a command decodes: the writer may have refused it for what its release or its settings
 * were then (its schema registered since, an op it did not know yet, a {@code lob.value.max.bytes}
 * raised since), and a replay that applied it there would apply the commands after it, and its
 * copy {@code redrive} sent back, in another order than the writer did.
 */
final class DeadLetterLog {
    private static final Logger log = LoggerFactory.getLogger(DeadLetterLog.class);
    /**
     * How long the read (and a replay's of lob.commands) may make no progress before it fails: not a bound on the whole
     * read, which takes as long as the topic is large (its letters carry the commands' values, and it is kept as long as
     * lob.commands).
     */
    static final Duration STALLED = Duration.ofMinutes(2);
    /** A read's {@code since} that reads every letter each partition keeps. */
    static final long FROM_START = -1;
    /**
     * How far before its first command's time a replay reads the letters: the commands after it may carry times a little
     * earlier (the broker that stamps them changed, its clock went back), and those within this still count as
     * {@link #covers covered}.
     */
    static final Duration BEFORE_FIRST = Duration.ofMinutes(10);
    /**
     * How much earlier than its command's time a letter may be stamped: none on a dead-letter topic LobStream made (a
     * letter keeps its command's time); on one that stamps its records on append, the clocks of two brokers apart.
     */
    static final Duration SKEW = Duration.ofMinutes(1);

    private final Set<Long> offsets;
    private final Map<Long, Letter> refusals;
    private final long[] keptSince;
    private final long decidedBelow;
    /** Whether every partition of the dead-letter topic was read, not only the one numbered as the commands'. */
    private final boolean wholeTopic;
    /** The time the letters were read from, in each partition retention has not trimmed; {@link #FROM_START} for all. */
    private final long since;
    /** The dead-letter topic's {@code cleanup.policy} if it compacts. */
    private final Optional<String> compaction;

    /** A log read from the start of a topic that does not compact. */
    DeadLetterLog(Set<Long> offsets, Map<Long, Letter> refusals, long[] keptSince, long decidedBelow, boolean wholeTopic) {
        this(offsets, refusals, keptSince, decidedBelow, wholeTopic, FROM_START, Optional.empty());
    }

    /**
     * @param offsets      the offsets of the partition's commands that have a letter
     * @param refusals     of those, the ones the writer refused for what its release or settings were ({@link #FOLLOWED}):
     *                     its kind and reason, and the command's value
     * @param keptSince    per partition of the dead-letter topic, the time of its oldest letter kept: 0 when retention
     *                     deleted none of it, Long.MAX_VALUE when it deleted all
     * @param decidedBelow the writer group's committed offset of the partition: the commands it has decided
     * @param wholeTopic   whether every partition of the dead-letter topic was read
     * @param since        the time each partition retention has not trimmed was read from ({@link #covers}), or
     *                     {@link #FROM_START}
     * @param compaction   the topic's {@code cleanup.policy} if it compacts
     */
    DeadLetterLog(Set<Long> offsets, Map<Long, Letter> refusals, long[] keptSince, long decidedBelow, boolean wholeTopic, long since,
                  Optional<String> compaction) {
        this.wholeTopic = wholeTopic;
        this.since = since;
        this.compaction = compaction;
        this.offsets = offsets;
        this.refusals = refusals;
        this.keptSince = keptSince;
        this.decidedBelow = decidedBelow;
    }

    /**
     * Reads the writer group's committed offset of {@code commands}, then the dead-letter topic, keeping the letters of
     * {@code commands} in offsets {@code [from, to)} (a catch-up of a few commands keeps no more): in that order, so
     * that every command below the offset has its letter in what is read. The writer sends a letter to the partition
     * numbered as its command's: where both topics have as many (as LobStream makes them), only that one is read. A
     * {@code stop} asked meanwhile ends it, in whatever Kafka call it waits in, with {@link InterruptedIOException}.
     *
     * <p>Letters are kept as long as the commands, for good by default: a catch-up of ten commands would read every
     * letter ever sent. So a partition retention has not trimmed is read from the first letter stamped at {@code since}
     * or later ({@link #since(ConsumerRecord)}); {@link #toJudge} reads again from the start for a command this does not
     * {@link #covers cover}. A trimmed one is read from its start, as {@link #keptSince} needs.
     */
    static DeadLetterLog read(LobStreamConfig config, TopicPartition commands, long from, long to, long since, ReplayStop stop)
            throws IOException {
        return read(config, commands, from, to, since, stop, false);
    }

    /**
     * The {@code since} to read the letters of a replay whose first command is {@code first} from: {@link #BEFORE_FIRST}
     * before its time, if the broker stamped it ({@code LogAppendTime}, as on a {@code lob.commands} LobStream made);
     * {@link #FROM_START} otherwise, as producers' clocks stamp commands out of their order.
     */
    static long since(ConsumerRecord<?, ?> first) {
        long since = first.timestamp() - BEFORE_FIRST.toMillis();
        return first.timestampType() == TimestampType.LOG_APPEND_TIME && since >= 0 ? since : FROM_START;
    }

    /**
     * Whether the letter of {@code command}, if it has one, is in what was read. A letter is stamped with its command's
     * time (or on append, later), so one stamped before {@code since} is of a command stamped before it, give or take
     * {@link #SKEW}; but only a command the broker stamped says when it came: a producer's clock can be behind.
     */
    boolean covers(ConsumerRecord<?, ?> command) {
        return since == FROM_START || command.timestampType() == TimestampType.LOG_APPEND_TIME
                && command.timestamp() >= since + SKEW.toMillis();
    }

    /**
     * As {@link #read(LobStreamConfig, TopicPartition, long, long, long, ReplayStop)}, reading every partition of the
     * dead-letter topic if {@code wholeTopic}: for a command whose key hashes elsewhere, whose letter an earlier release
     * sent to its key's partition, or that was judged when the topics had another count.
     */
    private static DeadLetterLog read(LobStreamConfig config, TopicPartition commands, long from, long to, long since, ReplayStop stop,
                                      boolean wholeTopic) throws IOException {
        Map<String, Object> p = config.clientConfig(ClientKind.CONSUMER);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"); // (as DeadLetterRedrive: not a jump to the end)
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false); // a topic missing is not made with the broker's defaults
        String topic = config.topics().deadLetters();
        String group = config.get(LobStreamConfig.APPLICATION_ID);
        Set<Long> offsets = new HashSet<>();
        Map<Long, Letter> refusals = new HashMap<>();
        String what = "reading the dead letters of " + commands;
        try (Admin admin = Admin.create(config.clientConfig(ClientKind.ADMIN));
             ReplayStop.Watch adminWatch = stop.watch(admin);
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             ReplayStop.Watch consumerWatch = stop.watch(consumer)) {
            long decidedBelow = stableCommittedOffset(admin, group, commands, stop);
            Optional<String> compaction = PartitionReplayer.compaction(admin, topic, stop);
            List<TopicPartition> all = consumer.partitionsFor(topic).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).sorted(java.util.Comparator.comparingInt(TopicPartition::partition))
                    .collect(Collectors.toList());
            List<TopicPartition> partitions = !wholeTopic && all.size() == consumer.partitionsFor(commands.topic()).size()
                    ? List.of(all.get(commands.partition())) : all;
            long[] keptSince = new long[all.size()];
            Arrays.fill(keptSince, Long.MAX_VALUE); // a partition not read: in doubt, its letters may have expired
            Map<TopicPartition, Long> first = consumer.beginningOffsets(partitions);
            for (TopicPartition tp : partitions) {
                keptSince[tp.partition()] = first.get(tp) == 0 ? 0 : Long.MAX_VALUE; // a trimmed one: its oldest letter kept, below
            }
            Map<TopicPartition, Long> end = DeadLetterTopic.uncommittedEnd(admin, partitions);
            Map<TopicPartition, Long> start = start(consumer, first, since);
            consumer.assign(partitions);
            start.forEach(consumer::seek);
            long lastProgress = System.nanoTime();
            long lastLog = lastProgress;
            long base = start.values().stream().mapToLong(Long::longValue).sum();
            long total = Math.max(0, end.values().stream().mapToLong(Long::longValue).sum() - base); // (a seek past it: letters since)
            long positions = -1;
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                stop.throwIfAsked(what + " stopped");
                long now = positions(consumer, partitions);
                if (System.nanoTime() - lastLog > 5_000_000_000L) {
                    // with many letters to read, a catch-up's log says why it waits
                    lastLog = System.nanoTime();
                    log.info("{}: {} of {} records read", what, now - base, total);
                }
                if (now != positions) {
                    positions = now;
                    lastProgress = System.nanoTime();
                } else if (System.nanoTime() - lastProgress > STALLED.toNanos()) {
                    throw new IOException("cannot read " + topic + " to its end (a partition without a leader?)",
                            new TimeoutException("no progress for " + STALLED.toSeconds() + " s"));
                }
                for (ConsumerRecord<byte[], byte[]> letter : consumer.poll(Duration.ofMillis(500))) {
                    if (letter.timestamp() >= 0 && keptSince[letter.partition()] != 0) {
                        keptSince[letter.partition()] = Math.min(keptSince[letter.partition()], letter.timestamp());
                    }
                    // (the last value of each: a letter copies its original's headers first, its own come after them)
                    long offset = DeadLetterTopic.originOffset(letter.headers()).orElse(-1);
                    if (commands.topic().equals(DeadLetterTopic.header(letter, DeadLetterTopic.ORIGIN_TOPIC))
                            && DeadLetterTopic.originPartition(letter.headers()).equals(OptionalInt.of(commands.partition()))
                            && offset >= from && offset < to) {
                        offsets.add(offset);
                        String kind = DeadLetterTopic.header(letter, DeadLetterTopic.KIND);
                        if (FOLLOWED.contains(kind)) {
                            Letter.of(kind, letter).ifPresent(l -> refusals.put(offset, l));
                        }
                    }
                }
            }
            // read from where a full read starts: it covers every command, and one stamped earlier needs no second read
            long readSince = start.equals(first) ? FROM_START : since;
            return new DeadLetterLog(offsets, refusals, keptSince, decidedBelow, partitions.size() == all.size(), readSince, compaction);
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            stop.throwIfAsked(e, what); // the stop ended the call it waited in
            throw new IOException("cannot read the dead letters of " + commands + " from " + topic + ", or the writer group "
                    + group + "'s offset of it: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while " + what, e);
        }
    }

    /**
     * The writer group's stable committed offset of {@code commands}, 0 when it committed none; asked again while its
     * commit is in flight ({@link TablespaceCheck#stableOffsetIn}).
     */
    private static long stableCommittedOffset(Admin admin, String group, TopicPartition commands, ReplayStop stop)
            throws IOException, InterruptedException, ExecutionException, TimeoutException {
        long deadline = System.nanoTime() + STALLED.toNanos();
        while (true) {
            OptionalLong committed = TablespaceCheck.stableOffsetIn(TablespaceCheck.askStableOffset(admin, group, commands,
                    30_000).get(30, TimeUnit.SECONDS), commands);
            if (committed.isPresent()) {
                return Math.max(0, committed.getAsLong()); // none committed: nothing decided
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("the committed offset of " + commands + " in group " + group + " stayed unstable (a commit "
                        + "in flight) for " + STALLED.toSeconds() + " s");
            }
            stop.throwIfAsked("reading the writer group's committed offset stopped");
            Thread.sleep(200); // a dead owner's commit is decided within its transaction timeout
        }
    }

    /**
     * The dead-letter topic's {@code cleanup.policy} if it compacts: it keeps only the newest letter of each LOB (none
     * after a letter sent without its value, a tombstone to it), so a command the writer refused may have lost its letter,
     * and a replay may then apply it. A command that does not decode and has no letter still stops the replay, its error
     * naming compaction as a cause it may have: taken for expired, every command a wrong registry cannot decode would be
     * skipped, and the copy left nearly empty without an error.
     */
    Optional<String> compaction() {
        return compaction;
    }

    /**
     * Where to read each partition from: its start ({@code first}), or, if retention has not trimmed it (nothing kept
     * there is older than a letter not kept), the first record stamped at {@code since} or later; every record before
     * that one is stamped earlier. Where none is, below the last stable offset (a read_committed lookup finds none past
     * it), from that offset: the letters of open transactions are still to read.
     */
    private static Map<TopicPartition, Long> start(KafkaConsumer<?, ?> consumer, Map<TopicPartition, Long> first, long since) {
        Map<TopicPartition, Long> start = new HashMap<>(first);
        Map<TopicPartition, Long> untrimmed = new HashMap<>();
        first.forEach((tp, offset) -> {
            if (offset == 0 && since != FROM_START) {
                untrimmed.put(tp, since);
            }
        });
        if (untrimmed.isEmpty()) {
            return start;
        }
        Map<TopicPartition, Long> stable = consumer.endOffsets(untrimmed.keySet());
        consumer.offsetsForTimes(untrimmed).forEach((tp, found) -> start.put(tp, found == null ? stable.get(tp) : found.offset()));
        return start;
    }

    private static long positions(KafkaConsumer<?, ?> consumer, List<TopicPartition> partitions) {
        return partitions.stream().mapToLong(consumer::position).sum();
    }

    /**
     * The kinds of refusal a replay takes from the writer's letter rather than judging again: those that depend on what the
     * writer's release and settings were, not on the command and the tablespace alone, and that the writer made before
     * changing anything. A limit raised since, a schema registered since, an op or a check a later release knows, would
     * otherwise have a replay apply what the writer refused, and the copy {@code redrive} sent back of it as a duplicate.
     */
    static final Set<String> FOLLOWED = Set.of(Rejection.UNDECODABLE, Rejection.UNSUPPORTED, Rejection.TOO_LARGE, Rejection.INVALID);

    /**
     * The writer's letter if it refused {@code command} for one of the {@link #FOLLOWED} kinds: a replay must refuse it
     * too, and apply its copy where {@code redrive} sent it back, as the writer did. The letter must hold the command's
     * value: one of a log made anew (or reset past records it lost) names offsets that other commands have now.
     */
    Optional<Letter> refusedAt(ConsumerRecord<byte[], byte[]> command) {
        Letter letter = command.offset() < decidedBelow ? refusals.get(command.offset()) : null;
        return letter != null && letter.holds(command.key(), command.value()) ? Optional.of(letter) : Optional.empty();
    }

    /**
     * A letter of a command the writer refused: its kind and reason (as the writer's store records it, without the kind
     * the letter's reason begins with), the hash of its key (null for a letter sent without it, too large), and the
     * command's value as its length and CRC32C (letters are kept in memory, their values are not); the CRC -1 for a letter
     * sent without the value (too large), whose length alone is known.
     */
    record Letter(String kind, String reason, Integer keyHash, int length, long crc32c) {
        static Optional<Letter> of(String kind, ConsumerRecord<byte[], byte[]> letter) {
            String reason = Optional.ofNullable(DeadLetterTopic.header(letter, DeadLetterTopic.REASON)).orElse(kind);
            reason = reason.startsWith(kind + ": ") ? reason.substring(kind.length() + 2) : reason;
            Integer keyHash = DeadLetterTopic.header(letter, DeadLetterTopic.KEY_DROPPED) != null ? null : Arrays.hashCode(letter.key());
            if (letter.value() != null) {
                return Optional.of(new Letter(kind, reason, keyHash, letter.value().length, crc32c(letter.value())));
            }
            String dropped = DeadLetterTopic.header(letter, DeadLetterTopic.VALUE_DROPPED);
            return dropped != null && dropped.matches("\\d{1,9}")
                    ? Optional.of(new Letter(kind, reason, keyHash, Integer.parseInt(dropped), -1)) : Optional.empty();
        }

        boolean holds(byte[] key, byte[] value) {
            return (keyHash == null || keyHash == Arrays.hashCode(key)) && value != null && value.length == length
                    && (crc32c < 0 || crc32c == crc32c(value));
        }

        static long crc32c(byte[] value) {
            CRC32C crc = new CRC32C();
            crc.update(value);
            return crc.getValue();
        }
    }

    /**
     * Returns if the writer dead-lettered {@code command}, which does not decode here (it names a schema the registry at
     * {@code registry} does not have, or names another, or this replay's deserializer reads it otherwise), or if nobody
     * can tell (the writer has not decided it yet, or its letter would have expired by now: taken for dead-lettered, with
     * a warning); throws otherwise: this replay does not read the commands as the writer did (another registry, one
     * restored from an older backup, another {@code lob.value.deserializer}), and going on would leave out commands the
     * writer applied.
     */
    void requireLetter(ConsumerRecord<byte[], ?> command, String registry, RuntimeException undecodable) throws IOException {
        if (offsets.contains(command.offset())) {
            return;
        }
        String where = command.topic() + "-" + command.partition() + " offset " + command.offset();
        if (command.offset() >= decidedBelow) {
            log.warn("{} does not decode here (registry {}: {}); the writer has not decided it yet (its group has committed up to "
                    + "offset {}): skipped, as the writer will dead-letter it", where, registry, undecodable.getMessage(), decidedBelow);
            return;
        }
        if (command.timestamp() >= 0 && command.timestamp() >= keptSince(command)) {
            throw new IOException(where + " does not decode here, and " + (compaction.isPresent() ? "has no dead letter" : "the "
                    + "writer did not dead-letter it") + ": the writer read it with "
                    + "another registry than " + registry + " (or this one lost schemas since: restored from an older backup?), or "
                    + "with another lob.value.deserializer. Replay as the writer reads." + compactionHint() + " ("
                    + undecodable.getMessage() + ")");
        }
        log.warn("{} does not decode here (registry {}: {}); the dead letters of its time have expired, so whether the writer "
                + "applied it cannot be told: skipped, as dead-lettered", where, registry, undecodable.getMessage());
    }

    /** Whether {@code command} has its letter in what was read, or is not decided yet: nothing more to read to judge it. */
    boolean settled(ConsumerRecord<byte[], ?> command) {
        return offsets.contains(command.offset()) || command.offset() >= decidedBelow;
    }

    /**
     * This log, or the letters of {@code commands} in {@code [from, to)} read again where it cannot judge {@code command}:
     * from the start where it does not {@link #covers cover} the command, and from every partition of the dead-letter topic
     * where the command is {@code ofAnotherPartition} than its key's and not {@link #settled} by the one read, as
     * {@link #requireLetterIfElsewhere} needs. Each at most once per replay.
     */
    DeadLetterLog toJudge(ConsumerRecord<byte[], ?> command, boolean ofAnotherPartition, LobStreamConfig config, TopicPartition commands,
                          long from, long to, ReplayStop stop) throws IOException {
        boolean older = !covers(command);
        boolean elsewhere = ofAnotherPartition && !wholeTopic && (older || !settled(command));
        if (!older && !elsewhere) {
            return this;
        }
        if (older) {
            log.info("{} offset {} ({} {}) may have a dead letter older than those read (from {}): reading them again from the "
                    + "start", commands, command.offset(), command.timestampType(), Instant.ofEpochMilli(command.timestamp()),
                    Instant.ofEpochMilli(since));
        }
        return read(config, commands, from, to, older ? FROM_START : since, stop, wholeTopic || elsewhere);
    }

    /**
     * Returns if the writer dead-lettered {@code command}, whose key hashes to partition {@code home} of the {@code partitions}
     * its topic has now, not to its own (a producer's own partitioner), or if nobody can tell (as {@link #requireLetter});
     * throws otherwise: the writer applied it when the topic had fewer partitions. Partitions were added since, and a copy
     * rebuilt with the count of now would refuse every command of a LOB whose key moved, and lose those LOBs without a word.
     */
    void requireLetterIfElsewhere(ConsumerRecord<byte[], ?> command, int home, int partitions) throws IOException {
        if (settled(command)) {
            return; // dead-lettered; or not decided yet, and the writer will judge it by the count of now
        }
        if (!wholeTopic) { // the letter may be in another partition, and each other partition's would pass for expired
            throw new IllegalStateException("read every partition of the dead-letter topic first (toJudge)");
        }
        String where = command.topic() + "-" + command.partition() + " offset " + command.offset();
        if (command.timestamp() >= 0 && command.timestamp() >= keptSince(command)) {
            throw new IOException(where + ": its key hashes to partition " + home + " of the " + partitions + " the topic has now, "
                    + (compaction.isPresent() ? "and it has no dead letter: the writer applied it, if" : "and the writer applied it:")
                    + " it did so when the topic had fewer partitions. Partitions were added, which moves "
                    + "LOBs away from their tablespaces; a copy rebuilt now would lose them. Copy the commands to topics of the old "
                    + "partition count and rebuild from those (README: the topics are co-partitioned)." + compactionHint());
        }
        log.warn("{}: its key hashes to partition {} of {}; the dead letters of its time have expired, so whether the writer "
                + "applied it cannot be told: skipped, as dead-lettered", where, home, partitions);
    }

    /** What to add to an error a missing letter makes when the topic compacts: compaction may have taken it. */
    private String compactionHint() {
        return compaction.map(policy -> " Or compaction took its letter: the dead-letter topic has cleanup.policy=" + policy
                + ", and keeps only the newest letter of each LOB (rebuild from topics that never compacted).").orElse("");
    }

    /**
     * Since when the dead-letter partition a letter of {@code command} would be in keeps letters: the writer sends a
     * letter to the partition numbered as its command's ({@code DeadLetters.BY_ORIGIN}); earlier releases sent it to its
     * key's, as Kafka's default partitioner picks it (any, without a key). The latest of those: in doubt, a letter may
     * have expired.
     */
    private long keptSince(ConsumerRecord<byte[], ?> command) {
        if (keptSince.length == 0) {
            return Long.MAX_VALUE;
        }
        long byOrigin = keptSince[command.partition() % keptSince.length];
        byte[] key = command.key();
        long byKey = key == null ? Arrays.stream(keptSince).max().orElse(Long.MAX_VALUE)
                : keptSince[Topics.partitionOf(key, keptSince.length)];
        return Math.max(byOrigin, byKey);
    }
}
