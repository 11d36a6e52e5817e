package io.lobstream.app.embedded;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The shell that runs a child process (the registry, a node in a bench) for this JVM: what ends it, and what not. */
@Timeout(60)
class OrphanGuardTest {
    @TempDir
    Path dir;

    /** Ctrl-C reaches the whole process group: the shell must outlive it, or this JVM's shutdown has no way to stop the child. */
    @Test
    void ctrlCLeavesTheShellAndItsChildToTheParentWhoseStdinStopsThem() throws Exception {
        Path pidFile = dir.resolve("child.pid");
        Process shell = new ProcessBuilder("/bin/sh", "-c", ChildJvm.orphanGuard("sleep 60", pidFile)).start();
        ProcessHandle child = childOf(pidFile);

        signal("INT", shell.pid());
        signal("QUIT", shell.pid());
        // pending before the shell can next run, so before it can exit: a shell they killed would end 130 or 131, not
        // with the status of the child it was left to wait for
        shell.getOutputStream().close(); // as when this JVM exits, even by SIGKILL
        assertThat(shell.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(shell.exitValue()).as("the child's status, killed by SIGTERM: the shell lived through SIGINT and SIGQUIT")
                .isEqualTo(128 + 15);
        await().atMost(Duration.ofSeconds(10)).until(() -> !child.isAlive());
    }

    @Test
    void theShellEndsWithItsChildsStatusAndLeavesNothingBehind() throws Exception {
        String marker = "guard-test-" + java.util.UUID.randomUUID();
        Process shell = new ProcessBuilder("/bin/sh", "-c", ChildJvm.orphanGuard("/bin/sh -c 'sleep 0.2; exit 3' " + marker, null)).start();
        assertThat(shell.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(shell.exitValue()).isEqualTo(3);
        // the guard (a fork of the shell, so its command line too) went with the child: it would otherwise wait on our
        // stdin, which is still open, and later signal whatever got the child's pid
        await().atMost(Duration.ofSeconds(10)).until(() -> ProcessHandle.allProcesses()
                .noneMatch(h -> h.info().commandLine().orElse("").contains(marker)));
    }

    private static ProcessHandle childOf(Path pidFile) {
        await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(pidFile) && !Files.readString(pidFile).isBlank());
        try {
            Optional<ProcessHandle> h = ProcessHandle.of(Long.parseLong(Files.readString(pidFile).trim()));
            assertThat(h).isPresent();
            return h.get();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void signal(String name, long pid) throws Exception {
        assertThat(new ProcessBuilder("kill", "-" + name, Long.toString(pid)).start().waitFor()).isZero();
    }
}
