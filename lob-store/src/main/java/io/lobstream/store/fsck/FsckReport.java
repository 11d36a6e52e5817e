package io.lobstream.store.fsck;

import java.util.List;

/**
 * What fsck found. {@code ok} when every page is exactly one of live, pending purge or free,
 * every checksum holds, and index and pages agree (pages of a chunked upload in progress are
 * counted as uploading; those of a version written but not yet published, in an online check
 * while writers run, as in flight); otherwise {@code problems} says where, with page numbers.
 */
public record FsckReport(boolean ok, long lobs, long versionsPending, long pagesLive, long pagesHistory, long pagesFree,
                         long pagesUploading, long pagesInFlight, long pagesChecked, List<String> problems) {
    public FsckReport {
        problems = List.copyOf(problems);
    }

    public FsckReport plus(FsckReport o) {
        List<String> all = new java.util.ArrayList<>(problems);
        all.addAll(o.problems);
        return new FsckReport(ok && o.ok, lobs + o.lobs, versionsPending + o.versionsPending, pagesLive + o.pagesLive,
                pagesHistory + o.pagesHistory, pagesFree + o.pagesFree, pagesUploading + o.pagesUploading, pagesInFlight + o.pagesInFlight,
                pagesChecked + o.pagesChecked, all);
    }

    public static FsckReport empty() {
        return new FsckReport(true, 0, 0, 0, 0, 0, 0, 0, 0, List.of());
    }

    /** This report with one more problem (one found outside the check itself, e.g. a tablespace that cannot be read). */
    public FsckReport withProblem(String problem) {
        return plus(new FsckReport(false, 0, 0, 0, 0, 0, 0, 0, 0, List.of(problem)));
    }
}
