package io.lobstream.store.config;

/** A configuration value that cannot be used; the message names the key and why. */
public class ConfigException extends IllegalArgumentException {
    public ConfigException(String message) {
        super(message);
    }

    public ConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
