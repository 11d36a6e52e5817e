package io.lobstream.app.embedded;

/** Words for a POSIX shell's command line: the child JVMs' scripts, and commands printed for a user to paste. */
public final class ShellWords {
    private ShellWords() {
    }

    /** {@code s} as one word, whatever it holds: in single quotes, a quote in it closed, escaped and opened again. */
    public static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
