#!/bin/sh
# The image's entry point: the CLI on java, sized by JAVA_OPTS, with the arguments as given.
# A purge worker without --worker-id takes the container's hostname (its container id), which a
# restart of the container keeps and a random id would not: the restarted worker then fences the
# transaction its predecessor left open, where lob.reclaim's readers would otherwise wait out that
# transaction's timeout. Each replica (docker compose up --scale purge=N) has a hostname of its own,
# unless the containers share one (network_mode: host, a fixed hostname:): give each --worker-id then.
set -e
# Passed as the variable `purge` reads when --worker-id is not given, not as an added argument: one given in an
# @FILE argument file would then be given twice, which the CLI refuses.
if [ "${1:-}" = purge ] && [ -z "${LOBSTREAM_PURGE_WORKER_ID:-}" ]; then
  LOBSTREAM_PURGE_WORKER_ID="${HOSTNAME:-$(hostname)}"
  export LOBSTREAM_PURGE_WORKER_ID
fi
# LOBSTREAM_LOG_EXTRA (README, Command line): unset when empty, which logback would read as the working directory and
# fail on at every start; one that cannot be read is said, not skipped without a word
if [ -n "${LOBSTREAM_LOG_EXTRA+set}" ]; then
  if [ -z "$LOBSTREAM_LOG_EXTRA" ]; then
    unset LOBSTREAM_LOG_EXTRA
  elif [ ! -f "$LOBSTREAM_LOG_EXTRA" ] || [ ! -r "$LOBSTREAM_LOG_EXTRA" ]; then
    echo "lobstream: LOBSTREAM_LOG_EXTRA=$LOBSTREAM_LOG_EXTRA cannot be read: its loggers are not set" >&2
    unset LOBSTREAM_LOG_EXTRA # (a directory would fail logback's start as an empty value does)
  fi
fi
# shellcheck disable=SC2086 # JAVA_OPTS is a list of options, split on purpose
# out of memory, the container ends (its restart policy starts it again) rather than run on with dead threads; the
# JVM's own warnings and its out-of-memory line go to stderr, as the CLI's launcher sends them (stdout: --json's object)
exec java -Xlog:all=off:stdout -Xlog:all=warning:stderr:uptime,level,tags -XX:+DisplayVMOutputToStderr \
  -XX:+ExitOnOutOfMemoryError $JAVA_OPTS -jar /opt/lobstream/lobstream-app.jar "$@"
