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
ENTRYPOINT ["java", "-jar", "/opt/lobstream/lobstream-app.jar"]
CMD ["--help"]
