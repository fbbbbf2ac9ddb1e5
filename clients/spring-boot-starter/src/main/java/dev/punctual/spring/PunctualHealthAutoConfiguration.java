package dev.punctual.spring;

import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Actuator's {@code punctual} health indicator ({@link PunctualHealthIndicator}), when
 * the application has Actuator; {@code management.health.punctual.enabled=false} turns
 * it off.
 */
@AutoConfiguration(after = PunctualAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
@ConditionalOnEnabledHealthIndicator("punctual")
public class PunctualHealthAutoConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "punctualHealthIndicator")
    PunctualHealthIndicator punctualHealthIndicator(PunctualClientAdapter adapter) {
        return new PunctualHealthIndicator(adapter);
    }
}
