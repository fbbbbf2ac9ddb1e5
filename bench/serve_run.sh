# Sourced by the scripts that measure `punctual serve` over HTTP (serve_ab.sh,
# serve_cpu.sh): one run's server on a fresh store, and its end.
#
#   start_serve BIN   sets dir, port, pid (the server) and redis_pid (STORE=redis:
#                     a fresh redis-server of the run's own, no persistence; else empty)
#   stop_serve        stops both and removes the run's directory
store=${STORE:-embedded}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_serve() {
  dir=$(mktemp -d)
  port=$(free_port)
  local store_args=(--data "$dir")
  redis_pid=
  if [ "$store" = redis ]; then
    local redis_port
    redis_port=$(free_port)
    redis-server --port "$redis_port" --save "" --appendonly no --dir "$dir" >/dev/null 2>&1 &
    redis_pid=$!
    for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
    store_args=(--store "redis://127.0.0.1:$redis_port")
  fi
  "$1" serve "${store_args[@]}" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
}
stop_serve() {
  kill "$pid"; wait "$pid" 2>/dev/null || true
  if [ -n "$redis_pid" ]; then kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
