package io.lobstream.app.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import static org.assertj.core.api.Assertions.assertThat;

class ThreadDeathsTest {
    @Test
    void aStreamThreadsDeathIsDebugAnyOtherAnError() {
        Logger logger = (Logger) LoggerFactory.getLogger(ThreadDeaths.class);
        ListAppender<ILoggingEvent> seen = new ListAppender<>();
        seen.start();
        Level level = logger.getLevel();
        logger.setLevel(Level.DEBUG);
        logger.addAppender(seen);
        try {
            ThreadDeaths deaths = new ThreadDeaths();
            deaths.uncaughtException(new Thread(() -> { }, "lobstream-writer-n1" + ThreadDeaths.STREAM_THREAD + "2"),
                    new IllegalStateException("said by the writer"));
            deaths.uncaughtException(new Thread(() -> { }, "lob-sync"), new IllegalStateException("said nowhere else"));
        } finally {
            logger.detachAppender(seen);
            logger.setLevel(level);
        }
        assertThat(seen.list).extracting(ILoggingEvent::getLevel).containsExactly(Level.DEBUG, Level.ERROR);
        assertThat(seen.list).allSatisfy(e -> assertThat(e.getThrowableProxy()).isNotNull());
    }
}
