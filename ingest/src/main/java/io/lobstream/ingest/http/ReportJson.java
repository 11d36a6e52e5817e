package io.lobstream.ingest.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lobstream.store.StoreStats;
import io.lobstream.store.fsck.FsckReport;

/**
 * The JSON of a tablespace's figures and of its fsck: one schema for {@code GET /status} and {@code GET /fsck} on a node
 * and for {@code lobstream fsck --json} offline, so a script reads either the same way.
 */
public final class ReportJson {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ReportJson() {
    }

    public static ObjectNode stats(StoreStats st) {
        ObjectNode n = JSON.createObjectNode();
        n.put("lobs_live", st.lobs());
        n.put("bytes_live", st.bytesLive());
        n.put("history_length", st.historyLength());
        pages(n, st.pagesLive(), st.pagesHistory(), st.pagesFree(), st.pagesUploading());
        n.put("tablespace_bytes", st.tablespaceBytes());
        return n;
    }

    public static ObjectNode fsck(FsckReport r) {
        ObjectNode n = JSON.createObjectNode();
        n.put("fsck_ok", r.ok());
        n.put("lobs_live", r.lobs());
        n.put("versions_pending", r.versionsPending());
        pages(n, r.pagesLive(), r.pagesHistory(), r.pagesFree(), r.pagesUploading());
        n.put("pages_in_flight", r.pagesInFlight());
        n.put("pages_checked", r.pagesChecked());
        ArrayNode problems = n.putArray("problems");
        r.problems().forEach(problems::add);
        return n;
    }

    /** The pages by state, under the same keys in both. */
    private static void pages(ObjectNode n, long live, long history, long free, long uploading) {
        n.put("pages_live", live);
        n.put("pages_history", history);
        n.put("pages_free", free);
        n.put("pages_uploading", uploading);
    }
}
