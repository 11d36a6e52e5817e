# LobStream node / purge worker image. Build: docker build -t lobstream .
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY . .
RUN ./mvnw -B -ntp -DskipTests package

FROM eclipse-temurin:17-jre
WORKDIR /opt/lobstream
COPY --from=build /src/app/target/lobstream-app.jar /opt/lobstream/lobstream-app.jar
COPY --from=build /src/app/target/lib /opt/lobstream/lib
VOLUME /data
EXPOSE 8080
# JAVA_OPTS sizes the JVM as with ./lobstream (e.g. JAVA_OPTS="-Xms2g -Xmx2g" in the compose file's environment).
# The image lacks the embedded registry (app/target/apicurio-registry is not copied): run node with --bootstrap and --registry.
ENV JAVA_OPTS=""
ENTRYPOINT ["sh", "-c", "exec java $JAVA_OPTS -jar /opt/lobstream/lobstream-app.jar \"$@\"", "lobstream"]
CMD ["--help"]
