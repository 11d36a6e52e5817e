package io.lobstream.schema;

import io.lobstream.avro.Extent;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.page.PageCodec;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class TopicsTest {
    /**
     * The worst page list: the longest value the default page size addresses, every page an extent of its own (a
     * tablespace of one-page holes), page numbers as large as a petabyte's file has, and a lobId at its longest.
     */
    @Test
    void aReclaimOfTheLongestValueInOnePageExtentsFitsOneRecord() throws Exception {
        LobStoreConfig store = new LobStoreConfig(Map.of());
        long pages = store.layoutMaxBytes() / PageCodec.payloadCapacity(store.pageSize());
        assertThat(pages).isGreaterThan(1_800_000);
        List<Extent> extents = new ArrayList<>((int) pages);
        long farPage = 1L << 36; // a petabyte of 16 KiB pages
        for (long i = 0; i < pages; i++) {
            extents.add(new Extent(farPage + 2 * i, 1));
        }
        ReclaimRecord reclaim = ReclaimRecord.newBuilder().setLobId("x".repeat(65_535)).setVersion(Long.MAX_VALUE)
                .setExtents(extents).setWorkerId("purge-" + "w".repeat(64)).setTime(Instant.now()).build();

        int bytes = reclaim.toByteBuffer().remaining();

        // what the registry's serializer and the record batch add is a few dozen bytes
        assertThat(bytes).isGreaterThan(1 << 20).isLessThan(Topics.PAGE_LIST_RECORD_MAX_BYTES - 1024);
    }
}
