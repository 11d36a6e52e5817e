package io.lobstream.app.embedded;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class LogTailTest {
    @TempDir
    Path dir;

    @Test
    void namesTheLogAndQuotesItsLastTwentyLines() throws Exception {
        Path log = dir.resolve("child.log");
        Files.writeString(log, IntStream.rangeClosed(1, 30).mapToObj(i -> "line " + i).collect(Collectors.joining("\n", "", "\n")));
        String message = LogTail.seeLog(log);
        assertThat(message).startsWith("see " + log + "; its last lines:\nline 11\n").endsWith("\nline 30").doesNotContain("line 10\n");
    }

    @Test
    void aLogLongerThanItReadsIsQuotedFromItsEnd() throws Exception {
        Path log = dir.resolve("big.log");
        Files.writeString(log, "x".repeat(100_000) + "\nthe reason\n");
        assertThat(LogTail.seeLog(log)).endsWith("\nthe reason");
    }

    @Test
    void aMissingOrEmptyLogIsOnlyNamed() throws Exception {
        Path missing = dir.resolve("missing.log");
        assertThat(LogTail.seeLog(missing)).isEqualTo("see " + missing);
        Path empty = Files.createFile(dir.resolve("empty.log"));
        assertThat(LogTail.seeLog(empty)).isEqualTo("see " + empty);
    }
}
