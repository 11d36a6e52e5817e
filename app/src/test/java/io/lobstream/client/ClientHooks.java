package io.lobstream.client;

/** What integration tests in other packages set on a {@link LobClient} that its public API does not offer. */
public final class ClientHooks {
    private ClientHooks() {
    }

    /** How many dead letters the client's tracker keeps between rounds; before its first {@code applied()}. */
    public static LobClient keepingDeadLetters(LobClient client, int max) {
        client.trackerSeenMax = max;
        return client;
    }
}
