package io.lobstream.store.impl;

import io.lobstream.store.fsck.Fsck;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.PageWriters;
import io.lobstream.store.index.UploadEntry;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.layout.VersionLayout;
import io.lobstream.store.layout.VersionReader;
import io.lobstream.store.page.CorruptPageException;
import io.lobstream.store.tablespace.PageFile;
import io.lobstream.store.tablespace.PageReadException;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;

/**
 * The check an unclean open makes of the versions the last flush did not cover ({@link SyncedFrontier}): that their
 * pages are on disk. Each one's root, index and data pages are read and verified as a read would (header, CRC, version,
 * place), and an upload's pages written so far. After a crash of the process alone they all are (the kernel kept them)
 * and the check reads them from its cache: at most the versions of one commit interval, and the uploads then in
 * progress. After a power loss one may fail: its index entry reached the disk and its pages did not, so the tablespace
 * holds a version it cannot read while its command counts as applied. Where no flush covered any (lob.sync off) and
 * the machine may have restarted, every version and upload is checked ({@link Recovery}): each as the scan meets it,
 * not held in a list until the scan ends.
 *
 * <p>A page whose write was lost holds what its place held before: zeros, or a page freed earlier, which fails its
 * header's LOB, version or sequence check, unless it was the same LOB's page at the same place in the value. A version
 * of a whole value wrote every page itself and accepts only its own version in each, so that page fails too. A version
 * that shares pages (a partial update) accepts an earlier version in a shared page; which pages it shares the index
 * says ({@link PageWriters}), and the others must carry its own version.
 */
final class TornWrites {
    /** Problems reported at most; the first is enough to refuse the tablespace. */
    private static final int MAX_REPORTED = 20;

    private final PageFile file;
    private final LobIndex index;
    /** Whether the last flush did not cover a version: its pages may be lost. */
    private final LongPredicate uncovered;
    private int versions;
    private int uploads;
    private long pagesRead;
    private final List<String> problems = new ArrayList<>();
    /** The problem of each version or upload found lost, by version (at most {@link Fsck#MAX_PROBLEMS}, as fsck reports). */
    private final Map<Long, String> lost = new LinkedHashMap<>();

    TornWrites(PageFile file, LobIndex index, LongPredicate uncovered) {
        this.file = file;
        this.index = index;
        this.uncovered = uncovered;
    }

    /**
     * Checks the pages of version {@code e}. Only a page that fails its check, that the device fails to read, or that
     * lies past the file's end is a loss: each names its page. Anything else the check throws is not the pages'.
     *
     * @throws UncheckedIOException for any other I/O error: the index failing to read, the page file closed under the
     *                              check (an interrupt, a close). That says nothing of the pages, and must not be taken
     *                              for a loss, which throws the copy away to rebuild it; the open fails, as it does when
     *                              the index fails in Recovery's own scan
     */
    void version(VersionEntry e) {
        versions++;
        try {
            VersionReader r = VersionReader.open(file, e.lobId(), e.version(), e.rootPage(), type -> pagesRead++);
            r.verifyDataPages(e.retained(), PageWriters.of(e, r.dataExtents(), index, uncovered));
        } catch (CorruptPageException | EOFException | PageReadException loss) {
            lost(e.version(), e.lobId() + "@" + e.version() + ": " + loss.getMessage());
        } catch (IOException notThePages) {
            throw new UncheckedIOException(notThePages);
        } catch (RuntimeException bug) { // an index entry that does not add up, say: the open fails, saying where
            throw new UncheckedIOException(new IOException("checking the pages of " + e.lobId() + "@" + e.version() + ": " + bug, bug));
        }
    }

    /** {@link #version} if {@code uncovered} says the last flush did not cover {@code e}. */
    void versionIf(VersionEntry e, LongPredicate uncovered) {
        if (uncovered.test(e.version())) {
            version(e);
        }
    }

    /** Checks the pages of {@code u} but those its first {@code bytesCovered} bytes filled, which the last flush forced. */
    void upload(UploadEntry u, long bytesCovered) {
        uploads++;
        long from = bytesCovered <= u.bytesDone() ? bytesCovered : 0; // more than it has done: not its, read all
        try {
            pagesRead += VersionReader.verifyUploadedPages(file, u.lobId(), u.version(),
                    VersionLayout.planStreamed(file.pageSize(), u.totalLength()), u.dataExtents(), from, u.bytesDone());
        } catch (CorruptPageException | EOFException | PageReadException loss) {
            lost(u.version(), "upload " + u.uploadId() + " of " + u.lobId() + "@" + u.version() + ": " + loss.getMessage());
        } catch (IOException notThePages) {
            throw new UncheckedIOException(notThePages); // as for a version
        } catch (RuntimeException bug) {
            throw new UncheckedIOException(new IOException("checking the pages of upload " + u.uploadId() + " of " + u.lobId() + "@"
                    + u.version() + ": " + bug, bug));
        }
    }

    /**
     * What was checked: how many versions and uploads, pages read, and the problems found (each names its page); and, in
     * the order found, by the version (or upload's version) they are of.
     */
    record Result(int versions, int uploads, long pagesRead, List<String> problems, Map<Long, String> lost) {
    }

    Result result() {
        return new Result(versions, uploads, pagesRead, List.copyOf(problems), Collections.unmodifiableMap(new LinkedHashMap<>(lost)));
    }

    private void lost(long version, String problem) {
        if (problems.size() < MAX_REPORTED) {
            problems.add(problem);
        }
        if (lost.size() < Fsck.MAX_PROBLEMS) {
            lost.putIfAbsent(version, problem);
        }
    }
}
