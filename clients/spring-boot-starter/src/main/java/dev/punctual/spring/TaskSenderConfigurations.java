package dev.punctual.spring;

import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@link TaskSender} of {@link PunctualTemplate}, one of three, imported by
 * {@link PunctualAutoConfiguration} in this order so the first that applies wins: the
 * outbox (its table set, a DataSource), after-commit (spring-tx on the class path),
 * plain HTTP. A holder, not a configuration itself: nested configurations of a
 * configuration class are read in no fixed order, imports in theirs.
 */
abstract class TaskSenderConfigurations {
    private TaskSenderConfigurations() {}

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.jdbc.datasource.DataSourceUtils")
    @ConditionalOnBean(DataSource.class)
    @ConditionalOnProperty("punctual.outbox.table")
    static class OutboxRoute {
        @Bean
        @ConditionalOnMissingBean
        TaskSender punctualTaskSender(DataSource dataSource, PunctualProperties properties,
                ObjectProvider<PunctualMetrics> metrics) {
            return new OutboxSender(dataSource, properties.getOutbox().getTable(),
                    metrics.getIfAvailable(() -> PunctualMetrics.NONE));
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.transaction.support.TransactionSynchronizationManager")
    static class AfterCommitRoute {
        @Bean
        @ConditionalOnMissingBean
        TaskSender punctualTaskSender(PunctualClientAdapter adapter, ObjectProvider<PunctualMetrics> metrics) {
            PunctualMetrics m = metrics.getIfAvailable(() -> PunctualMetrics.NONE);
            return new AfterCommitSender(new HttpSender(adapter, m), m);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class HttpRoute {
        @Bean
        @ConditionalOnMissingBean
        TaskSender punctualTaskSender(PunctualClientAdapter adapter, ObjectProvider<PunctualMetrics> metrics) {
            return new HttpSender(adapter, metrics.getIfAvailable(() -> PunctualMetrics.NONE));
        }
    }
}
