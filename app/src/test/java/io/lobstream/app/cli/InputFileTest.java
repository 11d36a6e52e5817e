package io.lobstream.app.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

/** What {@code put ID FILE} accepts as FILE: a file, or anything that reads through once, such as {@code <(cmd)}. */
class InputFileTest {
    @TempDir
    Path dir;

    @Test
    void aPipeIsReadThroughOnceIntoATemporaryFile() throws Exception {
        Path fifo = dir.resolve("fifo");
        assumeThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).as("mkfifo").isZero();
        byte[] value = new byte[100_000];
        value[99_999] = 7;
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            try (OutputStream out = Files.newOutputStream(fifo)) {
                out.write(value);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertThat(InputFile.problem(fifo.toString())).isNull();
        try (InputFile in = InputFile.open(fifo.toString(), Long.MAX_VALUE)) {
            writer.get();
            assertThat(in.length()).isEqualTo(value.length);
            try (var s = in.stream()) {
                assertThat(s.readAllBytes()).isEqualTo(value);
            }
        }
    }

    /** /proc and /sys: regular files of length 0 whose bytes the kernel makes as they are read. Sent as they said, empty. */
    @Test
    void aFileThatSaysItIsEmptyIsReadAllTheSame() throws Exception {
        Path status = Path.of("/proc/self/status");
        assumeThat(Files.isRegularFile(status) && Files.size(status) == 0).as("a /proc file of length 0").isTrue();
        try (InputFile in = InputFile.open(status.toString(), Long.MAX_VALUE); var s = in.stream()) {
            assertThat(in.length()).isPositive();
            assertThat(new String(s.readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII)).contains("Pid:");
        }
        Path empty = Files.createFile(dir.resolve("empty"));
        try (InputFile in = InputFile.open(empty.toString(), Long.MAX_VALUE)) {
            assertThat(in.length()).isZero();
        }
    }

    /** /sys: its files say 4096 bytes whatever they hold; sent as read, not as said (the put would fail short). */
    @Test
    void aSysFileIsReadForWhatItHolds() throws Exception {
        Path address = Path.of("/sys/class/net/lo/address");
        assumeThat(Files.isRegularFile(address)).as("a /sys file").isTrue();
        try (InputFile in = InputFile.open(address.toString(), Long.MAX_VALUE); var s = in.stream()) {
            assertThat(in.length()).isEqualTo(18); // "00:00:00:00:00:00\n", where the file says 4096
            assertThat(s.readAllBytes()).hasSize(18);
        }
    }

    /** A stream past the most the command may send stops the copy there, and leaves no temporary file behind. */
    @Test
    void aStreamPastTheLimitStopsTheCopy() throws Exception {
        Path fifo = dir.resolve("fifo");
        assumeThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).as("mkfifo").isZero();
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            try (OutputStream out = Files.newOutputStream(fifo)) {
                out.write(new byte[100_000]);
            } catch (Exception brokenPipe) {
                // the copy stopped reading: what a producer into a pipe sees
            }
        });
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        long before;
        try (var spooled = Files.list(tmp)) {
            before = spooled.filter(p -> p.getFileName().toString().startsWith("lobstream-stdin-")).count();
        }
        assertThatThrownBy(() -> InputFile.open(fifo.toString(), 1_000))
                .isInstanceOf(InputFile.TooLong.class).hasMessage("the input runs past 1000 bytes");
        writer.get();
        try (var spooled = Files.list(tmp)) {
            assertThat(spooled.filter(p -> p.getFileName().toString().startsWith("lobstream-stdin-")).count()).isEqualTo(before);
        }
    }

    @Test
    void whatIsNotAFileIsNamed() {
        assertThat(InputFile.problem(dir.resolve("missing").toString())).startsWith("no such file: ");
        assertThat(InputFile.problem(dir.toString())).startsWith("a directory, not a file: ");
        assertThat(InputFile.problem("-")).isNull();
    }
}
