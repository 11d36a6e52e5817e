package io.lobstream.store;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class StoreStatsTest {
    @Test
    void totalsAddEachTablespacesOwnBytesWhenPageSizesDiffer() {
        // a partition rebuilt after lob.page.size changed keeps its new size beside the others' old one
        StoreStats old = StoreStats.of(1, 100, 600, 300, 100, 0, 2, 16384);
        StoreStats rebuilt = StoreStats.of(1, 100, 600, 300, 50, 50, 2, 4096);

        StoreStats total = StoreStats.empty().plus(old).plus(rebuilt);

        assertThat(total.tablespaceBytes()).isEqualTo(1000L * 16384 + 1000L * 4096);
        assertThat(total.pagesTotal()).isEqualTo(2000);
        assertThat(total.historyLength()).isEqualTo(4);
    }
}
