package io.lobstream.ingest.replay;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.WakeupException;

import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Stops a replay from another thread, in whatever Kafka call it waits in: {@link #ask} wakes each consumer the replay
 * has open ({@link WakeupException}) and closes its admin clients at once (their pending calls fail), and the replay,
 * seeing {@link #asked}, throws {@link InterruptedIOException}. Not an interrupt: one that reaches a thread writing or
 * syncing a file closes the file for every thread. Once asked, it stays asked.
 */
final class ReplayStop {
    /** Ends a {@link #watch}; closing it throws nothing. */
    interface Watch extends AutoCloseable {
        @Override
        void close();
    }

    private volatile boolean asked;
    private final Set<KafkaConsumer<?, ?>> consumers = ConcurrentHashMap.newKeySet();
    private final Set<Admin> admins = ConcurrentHashMap.newKeySet();

    void ask() {
        asked = true;
        consumers.forEach(KafkaConsumer::wakeup);
        admins.forEach(a -> a.close(Duration.ZERO));
    }

    /** Has {@link #ask} wake {@code consumer} until the watch is closed; at once if it was asked before. */
    Watch watch(KafkaConsumer<?, ?> consumer) {
        consumers.add(consumer);
        if (asked) { // (ask sets the flag before it reads the set: one of the two sees the other)
            consumer.wakeup();
        }
        return () -> consumers.remove(consumer);
    }

    /** Has {@link #ask} close {@code admin} at once until the watch is closed; at once if it was asked before. */
    Watch watch(Admin admin) {
        admins.add(admin);
        if (asked) {
            admin.close(Duration.ZERO);
        }
        return () -> admins.remove(admin);
    }

    void throwIfAsked(String message) throws InterruptedIOException {
        if (asked) {
            throw new InterruptedIOException(message);
        }
    }

    /** Throws if {@code failure}, a Kafka call's, may be {@link #ask}'s doing: if it was asked. */
    void throwIfAsked(Exception failure, String what) throws InterruptedIOException {
        if (asked) {
            InterruptedIOException stopped = new InterruptedIOException(what + " stopped in a call to Kafka");
            stopped.initCause(failure);
            throw stopped;
        }
    }
}
