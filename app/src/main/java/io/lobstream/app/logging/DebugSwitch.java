package io.lobstream.app.logging;

/**
 * {@code LOBSTREAM_DEBUG}: stack traces with the CLI's one-line errors, and Kafka Streams' echoed failures kept
 * ({@link EchoedFailureFilter}). On when set to anything but empty, {@code 0} or {@code false}: {@code LOBSTREAM_DEBUG=0}
 * turned it on as long as only its presence was asked.
 */
public final class DebugSwitch {
    private DebugSwitch() {
    }

    public static boolean on() {
        return on(System.getenv("LOBSTREAM_DEBUG"));
    }

    static boolean on(String value) {
        return value != null && !value.isBlank() && !value.strip().equals("0") && !value.strip().equalsIgnoreCase("false");
    }
}
