package io.lobstream.app.cli;

import io.lobstream.client.LobClient;

/** A progress line on stderr for values over a few MB, only when stderr is a terminal. */
final class ProgressBar implements LobClient.Progress {
    private static final long SHOW_ABOVE = 4L << 20;

    private final String label;
    private final long total;
    private final boolean show;
    private int lastPercent = -1;

    ProgressBar(String label, long total) {
        this.label = label;
        this.total = total;
        this.show = total > SHOW_ABOVE && stderrIsATerminal();
    }

    /** What the launcher found ({@code [ -t 2 ]}); without it, Java's guess, which asks of stdin and stdout instead. */
    static boolean stderrIsATerminal() {
        String launcher = System.getenv("LOBSTREAM_STDERR_TERMINAL");
        return launcher != null ? launcher.equals("1") : System.console() != null;
    }

    @Override
    public void sent(long bytes) {
        if (!show) {
            return;
        }
        int percent = (int) (bytes * 100 / total);
        if (percent != lastPercent) {
            lastPercent = percent;
            int bar = percent / 4;
            System.err.printf("\r%s [%s%s] %3d%% %,d / %,d MiB", label, "#".repeat(bar), " ".repeat(25 - bar), percent,
                    bytes >> 20, total >> 20);
            if (bytes >= total) {
                System.err.println();
            }
        }
    }

    /** Ends the line a bar stopped short on (a write that failed part-way), so that what is said next has a line of its own. */
    void finish() {
        if (show && lastPercent >= 0 && lastPercent < 100) {
            System.err.println();
            lastPercent = 100;
        }
    }
}
