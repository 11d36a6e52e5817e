package io.lobstream.store;

import io.lobstream.store.index.VersionEntry;

import java.util.Optional;

/** A published version and the version it superseded, now pending purge. */
public record WriteResult(VersionEntry written, Optional<VersionEntry> superseded) {
}
