# LobStream node / purge worker image. Build: docker build -t lobstream .
# a JDK is all the build needs: ./mvnw fetches the Maven its wrapper properties name
FROM eclipse-temurin:17-jdk AS build
WORKDIR /src
COPY . .
# without the embedded registry, which the image does not ship (below). The Maven repository is a BuildKit cache
# (Docker's default builder since 23.0): COPY . . makes every change a new layer, and without the cache each build
# downloaded Maven and every dependency again
RUN --mount=type=cache,target=/root/.m2 ./mvnw -B -ntp -DskipTests -Dregistry.skip=true package

FROM eclipse-temurin:17-jre
WORKDIR /opt/lobstream
COPY --from=build /src/app/target/lobstream-app.jar /opt/lobstream/lobstream-app.jar
COPY --from=build /src/app/target/lib /opt/lobstream/lib
COPY deploy/docker-entrypoint.sh /opt/lobstream/docker-entrypoint.sh
# not root: the node writes only under /data, which this user owns (a volume made by an image from before this
# user is root's: chown it once, docker compose run --rm --no-deps --user root --entrypoint chown node -R 10001 /data)
RUN useradd --system --uid 10001 --no-create-home --home-dir /opt/lobstream lobstream && mkdir -p /data && chown lobstream /data
USER lobstream
VOLUME /data
# the working directory too: a node or purge worker not given --data-dir uses ./lobstream-data, under the volume
WORKDIR /data
# 8080: a node's HTTP API and /metrics; 9404: a purge worker's /metrics (--metrics-port 9404)
EXPOSE 8080 9404
# JAVA_OPTS sizes the JVM as with ./lobstream (e.g. JAVA_OPTS="-Xms2g -Xmx2g" in the compose file's environment).
# The image lacks the embedded registry (app/target/apicurio-registry is not copied): run node with --bootstrap and --registry.
ENV JAVA_OPTS=""
ENTRYPOINT ["sh", "/opt/lobstream/docker-entrypoint.sh"]
CMD ["--help"]
