package io.lobstream.app.embedded;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Where a child process's log is, and its last lines, for the message of the exception that
 * reports the child's failure: a CI run or a user's terminal keeps the message, while the log
 * may be gone with a temporary directory by the time someone looks.
 */
final class LogTail {
    private static final int LINES = 20;
    private static final int MAX_BYTES = 16 * 1024;

    private LogTail() {
    }

    /** "see LOG" and, if it can be read, its last lines. */
    static String seeLog(Path log) {
        return "see " + log + lastLines(log);
    }

    private static String lastLines(Path log) {
        try (SeekableByteChannel in = Files.newByteChannel(log)) {
            long size = in.size();
            ByteBuffer tail = ByteBuffer.allocate((int) Math.min(size, MAX_BYTES));
            in.position(size - tail.capacity());
            while (tail.hasRemaining() && in.read(tail) >= 0) {
                // read to the end
            }
            List<String> lines = new String(tail.array(), 0, tail.position(), StandardCharsets.UTF_8).lines().toList();
            List<String> last = lines.subList(Math.max(0, lines.size() - LINES), lines.size());
            return last.isEmpty() ? "" : "; its last lines:\n" + String.join("\n", last);
        } catch (IOException e) {
            return ""; // the message still names the log
        }
    }
}
