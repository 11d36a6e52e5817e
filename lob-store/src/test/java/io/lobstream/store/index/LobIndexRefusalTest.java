package io.lobstream.store.index;

import org.junit.jupiter.api.Test;
import org.rocksdb.RocksDBException;
import org.rocksdb.Status;

import static org.assertj.core.api.Assertions.assertThat;

/** Which failures of an index write are a full disk refusing it, and which a sync that failed (they fence the tablespace). */
class LobIndexRefusalTest {
    private static RocksDBException io(Status.SubCode sub, String state) {
        return new RocksDBException(state, new Status(Status.Code.IOError, sub, state));
    }

    @Test
    void onlyAWriteRefusedForWantOfSpaceIsARefusal() {
        assertThat(LobIndex.noSpace(io(Status.SubCode.NoSpace, "While appending to file: 000012.log: No space left on device")))
                .isTrue();
        assertThat(LobIndex.noSpace(io(Status.SubCode.NoSpace, "While fsync: a file with this name: No space left on device")))
                .as("an fsync that reported ENOSPC may have dropped pages").isFalse();
        assertThat(LobIndex.noSpace(io(Status.SubCode.NoSpace, "While fdatasync: 000012.log: No space left on device"))).isFalse();
        assertThat(LobIndex.noSpace(io(Status.SubCode.None, "While fsync: 000012.log: Input/output error"))).isFalse();
        assertThat(LobIndex.noSpace(new RocksDBException("no status"))).isFalse();
        assertThat(LobIndex.noSpace(io(Status.SubCode.NoSpace, "While appending to file: /srv/rsync/p-3/index/000012.log: "
                + "No space left on device"))).as("a path that holds \"sync\"").isTrue();
        assertThat(LobIndex.failedSync(io(Status.SubCode.None, "Writer has previous error."))).isFalse();
    }
}
