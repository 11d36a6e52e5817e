package io.lobstream.store.page;

/**
 * The header every written page starts with.
 *
 * @param type       what the page holds
 * @param lobIdHash  hash of the owning LOB's id: a page of another LOB is caught on read
 * @param version    the version that wrote the page: a stale page is caught on read
 * @param sequence   position of the page within its version (0 = root): a misplaced page is caught on read
 * @param payloadLength bytes of payload after the header
 */
public record PageHeader(PageType type, long lobIdHash, long version, int sequence, int payloadLength) {
}
