package io.lobstream.schema;

import io.lobstream.avro.LobOp;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class CommandFingerprintTest {
    /**
     * A fingerprint hashes the op's ordinal, and clients send fingerprints that the index keeps: an op inserted or moved
     * in LobCommand.avsc would make a newer writer, or a replay by one, refuse pieces an older one applied.
     */
    @Test
    void theOpsKeepTheirOrderNewOnesComeLast() {
        assertThat(LobOp.values()).as("LobOp's symbols: add new ones at the end only")
                .startsWith(LobOp.PUT, LobOp.WRITE, LobOp.APPEND, LobOp.TRUNCATE, LobOp.DELETE, LobOp.ABORT);
    }
}
