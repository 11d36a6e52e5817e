package io.lobstream.client;

import java.io.InterruptedIOException;

/** Why a write sent nothing more: its client was told to stop sending ({@link LobClient#stopSending}), as by a Ctrl-C. */
public final class WriteStoppedException extends InterruptedIOException {
    WriteStoppedException(String why) {
        super(why);
    }
}
