package io.lobstream.store.impl;

import io.lobstream.store.LobStore;
import io.lobstream.store.TablespaceClosedException;
import io.lobstream.store.TablespaceSyncFailedException;
import io.lobstream.store.index.IndexWriteRefusedException;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs a tablespace's syncs, and fails the tablespace for good at the first that fails. The kernel
 * may have dropped the pages it could not write and report the next fsync of the file as a
 * success (PostgreSQL's "fsyncgate"), so retrying would make a commit of lost writes. The failure
 * is recorded in the tablespace's directory ({@link TablespaceDirs#SYNC_FAILED}, as far as the disk
 * still takes a small write) and every later sync fails, so the writer's transaction aborts and
 * the task restarts, finds the marker and rebuilds the partition from Kafka.
 */
final class SyncGuard {
    private static final Logger log = LoggerFactory.getLogger(SyncGuard.class);
    /** The copies whose sync failed in this process, should their marker not have reached the disk (a rebuilt one is a new copy). */
    private static final Set<String> FAILED_HERE = ConcurrentHashMap.newKeySet();

    private final String name;
    private final Path dir;
    /** This copy's id (the descriptor's): renamed under this object's monitor, which a failure takes to record it. */
    private volatile String copyId;
    /** The first failed sync: from then on nothing is synced. */
    private volatile IOException failure;

    SyncGuard(String name, Path dir, String copyId) {
        this.name = name;
        this.dir = dir;
        this.copyId = copyId;
    }

    /** Gives the copy a new id, what {@code rename} writes. */
    interface Rename {
        String newCopyId() throws IOException;
    }

    /**
     * Runs {@code rename} unless a sync failed ({@link LobStore#renewCopyId()}): a failed copy is rebuilt, not renamed, and
     * keeps the id {@link #FAILED_HERE} has. A failure from then on is recorded under the new id.
     */
    synchronized void renameCopy(Rename rename) throws IOException {
        refuseIfFailed();
        copyId = rename.newCopyId();
    }

    String copyId() {
        return copyId;
    }

    /** Whether a sync of this copy of a tablespace failed in this process (its marker may not be on disk). */
    static boolean failedHere(String copyId) {
        return copyId != null && FAILED_HERE.contains(copyId);
    }

    /** Runs {@code sync}; if it fails, the tablespace is failed for good. */
    void run(GroupSync.SyncAction sync) throws IOException {
        refuseIfFailed();
        try {
            sync.sync();
        } catch (ClosedChannelException e) {
            throw e; // the channel was closed under the sync (an interrupt, a close): not the disk, and a reopen is sound
        } catch (IndexWriteRefusedException e) {
            throw e; // a write the disk refused, no fsync failed: the store reopens from its last good sync (a full disk)
        } catch (TablespaceClosedException e) {
            throw e; // a sync not tried (the store closed without its checkpoint's): nothing failed on the disk
        } catch (IOException e) {
            fail(e);
            throw new TablespaceSyncFailedException(dir, "a sync failed: " + e, e);
        }
    }

    /** Marks the tablespace failed by {@code e}, as a failed sync does. */
    void fail(IOException e) {
        String failedCopy;
        synchronized (this) {
            if (failure != null) {
                return;
            }
            failure = e;
            failedCopy = copyId; // not renamed from here on (renameCopy)
        }
        log.error("{}: a sync failed; the tablespace will not be opened again and its partition is rebuilt from Kafka", name, e);
        if (failedCopy != null) {
            FAILED_HERE.add(failedCopy);
        }
        try {
            TablespaceDirs.markSyncFailed(dir, Instant.now() + " " + e);
        } catch (IOException | RuntimeException markerFailed) {
            // a restarted node, finding no marker, would trust the tablespace: only the operator can stop that now
            log.error("{}: could not write {} either ({}): before this node starts again, move {} aside (or write a file {} "
                    + "in it), so that its partition is rebuilt from Kafka instead of trusting pages that may not be on disk",
                    name, TablespaceDirs.SYNC_FAILED, markerFailed.toString(), dir, TablespaceDirs.SYNC_FAILED);
        }
    }

    boolean failed() {
        return failure != null;
    }

    /** @throws TablespaceSyncFailedException if a sync failed before */
    void refuseIfFailed() throws TablespaceSyncFailedException {
        IOException failed = failure;
        if (failed != null) {
            throw new TablespaceSyncFailedException(dir, "a sync failed earlier: " + failed, failed);
        }
    }
}
