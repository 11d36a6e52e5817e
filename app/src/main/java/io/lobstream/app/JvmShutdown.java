package io.lobstream.app;

/** Whether this JVM's shutdown has begun (Ctrl-C, SIGTERM, System.exit): what fails then is the stop, not news. */
public final class JvmShutdown {
    private JvmShutdown() {
    }

    /** Asked of the JVM itself: it refuses a new shutdown hook once its hooks run. */
    public static boolean underWay() {
        Thread probe = new Thread(() -> { });
        try {
            Runtime.getRuntime().addShutdownHook(probe);
        } catch (IllegalStateException shuttingDown) {
            return true;
        }
        Runtime.getRuntime().removeShutdownHook(probe);
        return false;
    }
}
