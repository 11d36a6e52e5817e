package io.lobstream.ingest.http;

import io.lobstream.ingest.http.Preconditions.Outcome;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** RFC 9110 §13.1.1, §13.1.2 and §13.2.2 for a value whose entity tag is {@code "c1.7"}. */
class PreconditionsTest {
    private static final String ETAG = "\"c1.7\"";

    private static Outcome evaluate(String ifMatch, String ifNoneMatch) {
        return Preconditions.evaluate(ifMatch, ifNoneMatch, ETAG);
    }

    @Test
    void noPreconditionsServeTheValue() {
        assertThat(evaluate(null, null)).isEqualTo(Outcome.PROCEED);
    }

    @Test
    void ifMatchComparesStrongly() {
        assertThat(evaluate(ETAG, null)).isEqualTo(Outcome.PROCEED);
        assertThat(evaluate("*", null)).isEqualTo(Outcome.PROCEED);
        assertThat(evaluate("\"c1.6\", \"c1.7\"", null)).isEqualTo(Outcome.PROCEED);
        assertThat(evaluate("\"c1.6\"", null)).isEqualTo(Outcome.FAILED);
        assertThat(evaluate("W/\"c1.7\"", null)).as("a weak tag never matches strongly").isEqualTo(Outcome.FAILED);
        assertThat(evaluate("c1.7", null)).as("unquoted: not an entity tag").isEqualTo(Outcome.FAILED);
    }

    @Test
    void ifNoneMatchComparesWeaklyAndAnswersNotModified() {
        assertThat(evaluate(null, ETAG)).isEqualTo(Outcome.NOT_MODIFIED);
        assertThat(evaluate(null, "W/\"c1.7\"")).isEqualTo(Outcome.NOT_MODIFIED);
        assertThat(evaluate(null, "*")).isEqualTo(Outcome.NOT_MODIFIED);
        assertThat(evaluate(null, "\"c1.5\",W/\"c1.7\"")).isEqualTo(Outcome.NOT_MODIFIED);
        assertThat(evaluate(null, "\"c1.6\"")).isEqualTo(Outcome.PROCEED);
    }

    @Test
    void ifMatchIsEvaluatedFirst() {
        assertThat(evaluate("\"c1.6\"", ETAG)).isEqualTo(Outcome.FAILED);
        assertThat(evaluate(ETAG, ETAG)).isEqualTo(Outcome.NOT_MODIFIED);
    }
}
