package io.lobstream.schema;

import io.lobstream.avro.Extent;
import io.lobstream.avro.LobCommand;
import io.lobstream.avro.LobOp;
import io.lobstream.avro.ReclaimRecord;
import io.lobstream.avro.UndoCause;
import io.lobstream.avro.UndoRecord;
import io.lobstream.schema.serde.RegistryHttpClient;
import io.lobstream.schema.serde.RegistryUnavailableException;
import io.lobstream.store.config.ConfigException;
import io.lobstream.store.config.ConfigKey;
import org.apache.avro.util.ClassSecurityValidator;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;

import java.util.Map;

/**
 * Builds the value serdes named in {@link LobStreamConfig} (class names, the Kafka way), and
 * trusts LobStream's generated classes once, centrally: Avro 1.12 refuses to instantiate
 * specific-record classes outside its trusted packages.
 */
public final class LobSerdes {
    static {
        trustGeneratedClasses();
        RegistryHttpClient.install(); // whichever serdes are named (Apicurio's stock ones too)
    }

    private LobSerdes() {
    }

    private static synchronized void trustGeneratedClasses() {
        ClassSecurityValidator.ClassSecurityPredicate ours = ClassSecurityValidator.builder()
                .add(LobCommand.class).add(LobOp.class).add(UndoRecord.class).add(UndoCause.class)
                .add(ReclaimRecord.class).add(Extent.class).build();
        ClassSecurityValidator.setGlobal(ClassSecurityValidator.composite(ClassSecurityValidator.getGlobal(), ours));
    }

    @SuppressWarnings("unchecked")
    public static Serializer<Object> valueSerializer(LobStreamConfig config) {
        Serializer<Object> s = (Serializer<Object>) instantiate(LobStreamConfig.VALUE_SERIALIZER, config, Serializer.class);
        Map<String, Object> settings = config.serdeConfig();
        RegistryHttpClient.configuring(settings, () -> s.configure(settings, false)); // Apicurio's stock ones too
        return s;
    }

    /**
     * A producer of LobStream's values ({@link #valueSerializer}) with {@code settings}. A setting the producer refuses
     * (a ConfigException) is refused before it owns the serializer, which it would close: the serializer (its registry
     * client) is closed here, whatever the failure, as Kafka's constructor closes it only if it failed after taking it
     * (then it is closed twice: better than left open).
     */
    public static <K> KafkaProducer<K, Object> producer(Map<String, Object> settings, Serializer<K> keys, LobStreamConfig config) {
        Serializer<Object> values = valueSerializer(config);
        try {
            return new KafkaProducer<>(settings, keys, values);
        } catch (RuntimeException refused) {
            Utils.closeQuietly(values, "the value serializer");
            throw refused;
        }
    }

    @SuppressWarnings("unchecked")
    public static Deserializer<Object> valueDeserializer(LobStreamConfig config) {
        Deserializer<Object> d = (Deserializer<Object>) instantiate(LobStreamConfig.VALUE_DESERIALIZER, config, Deserializer.class);
        Map<String, Object> settings = config.serdeConfig();
        RegistryHttpClient.configuring(settings, () -> d.configure(settings, false));
        return d;
    }

    /**
     * Checks that lob.value.serializer and lob.value.deserializer name classes that make a Kafka serializer and deserializer,
     * without configuring them (which asks the registry): a misspelt class is a usage error before a broker starts or a
     * topic is created, not after.
     */
    public static void checkClasses(LobStreamConfig config) {
        instantiate(LobStreamConfig.VALUE_SERIALIZER, config, Serializer.class);
        instantiate(LobStreamConfig.VALUE_DESERIALIZER, config, Deserializer.class);
    }

    /** A new {@code type} of the class {@code key} names; a class that is missing or no such type is a bad setting of it. */
    private static Object instantiate(ConfigKey<String> key, LobStreamConfig config, Class<?> type) {
        String className = config.get(key);
        Class<?> c;
        try {
            c = Class.forName(className);
        } catch (ClassNotFoundException e) {
            throw new ConfigException(key.name() + "=" + className + ": no such class on the class path");
        } catch (LinkageError e) { // a static initializer that threw, say: its reason kept, not the Error (a JVM's, to a handler)
            throw new ConfigException(key.name() + "=" + className + ": cannot load it (" + (e.getCause() != null ? e.getCause() : e) + ")",
                    e.getCause());
        }
        if (!type.isAssignableFrom(c)) {
            throw new ConfigException(key.name() + "=" + className + ": not a Kafka " + type.getSimpleName());
        }
        try {
            return c.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError e) { // abstract, an interface, no public no-argument constructor
            // a constructor that threw: its exception, not the reflection's wrapper, which says nothing
            Throwable why = e instanceof java.lang.reflect.InvocationTargetException && e.getCause() != null ? e.getCause() : e;
            throw new ConfigException(key.name() + "=" + className + ": cannot make one (" + why + ")", why instanceof Error ? null : why);
        }
    }

    /**
     * Decodes a value and checks it is of the expected record type.
     *
     * @throws RegistryUnavailableException if the schema registry did not answer: retry, the record may be good
     * @throws RuntimeException             if the record cannot be decoded
     */
    public static <T> T decode(Deserializer<Object> d, String topic, byte[] bytes, Class<T> type) {
        if (bytes == null) {
            throw new IllegalArgumentException("null value (tombstone)");
        }
        Object o;
        try {
            o = d.deserialize(topic, bytes);
        } catch (RegistryUnavailableException e) {
            throw e; // said already, by a deserializer that knows where it failed
        } catch (RuntimeException e) {
            if (RegistryUnavailableException.isRegistryFailure(e)) {
                throw new RegistryUnavailableException("cannot decode a record of " + topic + ": the schema registry did not answer: " + e, e);
            }
            throw e;
        }
        if (!type.isInstance(o)) {
            throw new IllegalArgumentException("expected a " + type.getSimpleName() + ", got "
                    + (o == null ? "null" : o.getClass().getName()));
        }
        return type.cast(o);
    }
}
