package dev.punctual.spring;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.punctual.Delivery;
import dev.punctual.Outcome;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import org.springframework.aop.support.AopUtils;
import org.springframework.util.ReflectionUtils;

/**
 * A {@link PunctualHandler} method of a bean, checked when the bean is made: at most
 * one payload parameter and one {@link Delivery}, returning void or {@link Outcome}.
 * {@link #bind} binds the arguments and calls it on the bean (through its proxy, so a
 * {@code @Transactional} handler runs in its transaction).
 */
final class HandlerMethod {
    final String queue;
    final int concurrency;
    final String name;
    private final Object bean;
    private final Method method;
    /** The payload parameter's index, -1 when it has none. */
    private final int payloadIndex;
    private final Type payloadType;

    HandlerMethod(Object bean, Method declared, PunctualHandler annotation) {
        this.queue = annotation.queue();
        this.concurrency = annotation.concurrency();
        this.name = declared.getDeclaringClass().getName() + "." + declared.getName();
        if (queue.isEmpty()) throw invalid("names no queue");
        if (concurrency < 1) throw invalid("has concurrency " + concurrency + ": it must be at least 1");
        Class<?> returns = declared.getReturnType();
        if (returns != void.class && returns != Outcome.class) {
            throw invalid("returns " + returns.getSimpleName() + ": a handler returns void (done) or Outcome");
        }
        int payload = -1;
        int delivery = -1;
        Class<?>[] types = declared.getParameterTypes();
        for (int i = 0; i < types.length; i++) {
            if (types[i] == Delivery.class) {
                if (delivery >= 0) throw invalid("takes two Delivery parameters");
                delivery = i;
            } else {
                if (payload >= 0) throw invalid("takes two payload parameters: a handler takes the payload, the Delivery, or both");
                payload = i;
            }
        }
        this.payloadIndex = payload;
        this.payloadType = payload >= 0 ? declared.getGenericParameterTypes()[payload] : null;
        this.bean = bean;
        this.method = AopUtils.selectInvocableMethod(declared, bean.getClass());
        ReflectionUtils.makeAccessible(method);
    }

    private IllegalStateException invalid(String why) {
        return new IllegalStateException("@PunctualHandler " + name + " " + why);
    }

    /** The method as the worker calls it: the payload bound by {@code mapper}; answers null for done. */
    PunctualClientAdapter.DeliveryHandler bind(ObjectMapper mapper) {
        JavaType type = payloadType == null ? null : mapper.constructType(payloadType);
        return delivery -> invoke(delivery, mapper, type);
    }

    private Outcome invoke(Delivery delivery, ObjectMapper mapper, JavaType type) throws Exception {
        Class<?>[] types = method.getParameterTypes();
        Object[] args = new Object[types.length];
        for (int i = 0; i < args.length; i++) {
            args[i] = i == payloadIndex ? PunctualClientAdapter.payload(delivery, mapper, type) : delivery;
        }
        try {
            return (Outcome) method.invoke(bean, args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception cause) throw cause;
            if (e.getCause() instanceof Error error) throw error;
            throw e;
        }
    }
}
