package dev.punctual.spring;

import java.lang.reflect.Method;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Finds the {@link PunctualHandler} methods of every bean as it is made, checks them
 * and keeps them by queue: at most one method per queue, so a second one fails the
 * application's start naming both. {@link PunctualWorkers} runs them.
 */
final class PunctualHandlerRegistrar implements BeanPostProcessor {
    private final Map<String, HandlerMethod> byQueue = Collections.synchronizedMap(new LinkedHashMap<>());

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        Class<?> type = AopUtils.getTargetClass(bean);
        Map<Method, PunctualHandler> found = MethodIntrospector.selectMethods(type,
                (MethodIntrospector.MetadataLookup<PunctualHandler>) m -> AnnotatedElementUtils.findMergedAnnotation(m, PunctualHandler.class));
        found.forEach((method, annotation) -> {
            HandlerMethod handler = new HandlerMethod(bean, method, annotation);
            HandlerMethod before = byQueue.putIfAbsent(handler.queue, handler);
            if (before != null) {
                throw new IllegalStateException("queue " + handler.queue + " has two @PunctualHandler methods, " + before.name
                        + " and " + handler.name + ": one method handles a queue");
            }
        });
        return bean;
    }

    /** The handlers found so far, one per queue. */
    Collection<HandlerMethod> handlers() {
        synchronized (byQueue) {
            return List.copyOf(byQueue.values());
        }
    }
}
