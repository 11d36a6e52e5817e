package io.lobstream.ingest.http;

import com.sun.net.httpserver.Headers;
import io.lobstream.ingest.http.Preconditions.Outcome;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/** RFC 9110 §13.1.1, §13.1.2 and §13.2.2 for a value whose entity tag is {@code "c1.7"}. */
class PreconditionsTest {
    private static final String ETAG = "\"c1.7\"";

    private static Outcome evaluate(String ifMatch, String ifNoneMatch) {
        return Preconditions.evaluate(ifMatch, ifNoneMatch, ETAG);
    }

    /** As {@code ByteRangeTest}'s: a list that does not parse is refused without searching on from every position. */
    @Test
    void aLongHostileListIsRefusedWithoutBacktracking() {
        String spaces = " ".repeat(400_000);
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            assertThat(Preconditions.matches("x" + spaces + "y", ETAG, true)).isFalse();
            assertThat(Preconditions.matches(spaces + "\"c1.6\"," + spaces + ETAG + spaces, ETAG, false)).isTrue();
        });
    }

    /** RFC 9110 §5.3: the field lines of one list header make one list; an empty line adds nothing to it. */
    @Test
    void aListSentOnSeveralLinesIsOneList() {
        Headers h = new Headers();
        h.add("If-None-Match", "\"c1.6\"");
        h.add("If-None-Match", "");
        h.add("If-None-Match", "W/" + ETAG);
        assertThat(evaluate(null, Responses.listHeader(h, "If-None-Match"))).isEqualTo(Outcome.NOT_MODIFIED);
        assertThat(evaluate("\"c1.6\",, " + ETAG, null)).as("an empty element between two").isEqualTo(Outcome.PROCEED);
        assertThat(evaluate(", " + ETAG + ",", null)).as("empty elements at both ends").isEqualTo(Outcome.PROCEED);
        h.add("If-Match", "");
        assertThat(evaluate(Responses.listHeader(h, "If-Match"), null)).as("an empty list names nothing").isEqualTo(Outcome.FAILED);
        assertThat(Responses.listHeader(h, "If-Range")).isNull();
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
