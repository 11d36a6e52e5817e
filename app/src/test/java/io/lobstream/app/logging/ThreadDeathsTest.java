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
    void aDeathTheWriterReportedIsDebugAnyOtherAnError() {
        Logger logger = (Logger) LoggerFactory.getLogger(ThreadDeaths.class);
        ListAppender<ILoggingEvent> seen = new ListAppender<>();
        seen.start();
        Level level = logger.getLevel();
        logger.setLevel(Level.DEBUG);
        logger.addAppender(seen);
        try {
            IllegalStateException said = new IllegalStateException("said by the writer");
            ThreadDeaths deaths = new ThreadDeaths(e -> e == said);
            deaths.uncaughtException(new Thread(() -> { }, "lobstream-writer-n1-StreamThread-2"), said);
            // a replacement stream thread that could not be made: the writer's handler never saw it
            deaths.uncaughtException(new Thread(() -> { }, "lobstream-writer-n1-StreamThread-2"),
                    new IllegalStateException("said nowhere else"));
        } finally {
            logger.detachAppender(seen);
            logger.setLevel(level);
        }
        assertThat(seen.list).extracting(ILoggingEvent::getLevel).containsExactly(Level.DEBUG, Level.ERROR);
        assertThat(seen.list).allSatisfy(e -> assertThat(e.getThrowableProxy()).isNotNull());
    }
}
