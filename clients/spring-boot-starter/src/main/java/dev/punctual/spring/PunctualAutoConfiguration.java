package dev.punctual.spring;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.punctual.PunctualClient;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * The starter's beans: the client (unless the application makes its own), the
 * {@link PunctualTemplate}, the workers of the {@link PunctualHandler} methods, and the
 * meters when Micrometer is there. The template's route is the first of
 * {@link TaskSenderConfigurations} that applies. Ordered after Jackson's, the
 * DataSource's and the meter registry's auto-configurations, whose beans it uses.
 */
@AutoConfiguration(afterName = {
        "org.springframework.boot.autoconfigure.jackson.JacksonAutoConfiguration",
        "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
        "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"})
@EnableConfigurationProperties(PunctualProperties.class)
@Import({TaskSenderConfigurations.OutboxRoute.class, TaskSenderConfigurations.AfterCommitRoute.class,
        TaskSenderConfigurations.HttpRoute.class})
public class PunctualAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    PunctualClient punctualClient(PunctualProperties properties) {
        return PunctualClientAdapter.client(properties);
    }

    @Bean
    PunctualClientAdapter punctualClientAdapter(PunctualClient client) {
        return new PunctualClientAdapter(client);
    }

    @Bean
    @ConditionalOnMissingBean
    PunctualTemplate punctualTemplate(TaskSender sender, ObjectProvider<ObjectMapper> mapper, PunctualClient client,
            PunctualProperties properties) {
        if (properties.getOutbox().getTable() != null && !(sender instanceof OutboxSender)) {
            throw new IllegalStateException("punctual.outbox.table is " + properties.getOutbox().getTable()
                    + " but the application has no DataSource (or no spring-jdbc): the outbox is written through it");
        }
        return new PunctualTemplate(sender, mapper.getIfAvailable(ObjectMapper::new), client);
    }

    /** Static: a post-processor is made before the other beans, and needs none of them. */
    @Bean
    static PunctualHandlerRegistrar punctualHandlerRegistrar() {
        return new PunctualHandlerRegistrar();
    }

    @Bean
    PunctualWorkers punctualWorkers(PunctualHandlerRegistrar registrar, PunctualClientAdapter adapter,
            PunctualProperties properties, ObjectProvider<ObjectMapper> mapper, ObjectProvider<PunctualMetrics> metrics) {
        return new PunctualWorkers(registrar, adapter, properties, mapper.getIfAvailable(ObjectMapper::new),
                metrics.getIfAvailable(() -> PunctualMetrics.NONE));
    }

    /** The meters, where Micrometer is on the class path and the application has a registry. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
    static class Metrics {
        @Bean
        @ConditionalOnBean(type = "io.micrometer.core.instrument.MeterRegistry")
        PunctualMetrics punctualMetrics(MeterRegistry registry) {
            return new MicrometerPunctualMetrics(registry);
        }
    }
}
