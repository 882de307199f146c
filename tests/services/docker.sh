#!/usr/bin/env bash
# A real Docker engine and a loopback image registry for the tests and `make images`.
#
#   tests/services/docker.sh start    install (if missing) and start dockerd and the registry
#   tests/services/docker.sh stop     stop only what `start` started
#   tests/services/docker.sh status   say what is running and who started it
#
# Idempotent: `start` twice starts nothing new; an engine that was already answering (a
# developer's own dockerd) is used and never stopped. Debian's packages do not start their
# services here (policy-rc.d), so the daemons are started with nohup and tracked by pidfile.
#
# Environment: DOSSIER_REGISTRY_PORT (default 5055), DOSSIER_SERVICE_STATE (default
# .ci/state/docker under the repository, git-ignored).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
STATE="${DOSSIER_SERVICE_STATE:-$ROOT/.ci/state/docker}"
PORT="${DOSSIER_REGISTRY_PORT:-5055}"
REGISTRY_DATA="${DOSSIER_REGISTRY_DATA:-/var/lib/rig-dossier-registry}"

say() { echo "docker.sh: $*" >&2; }

engine_answers() { docker info >/dev/null 2>&1; }
registry_answers() { curl -fsS "http://127.0.0.1:$PORT/v2/" >/dev/null 2>&1; }

alive() {  # alive PIDFILE: the process named in PIDFILE still runs
    [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        if ((SECONDS >= deadline)); then
            say "$what did not answer within the wait"
            return 1
        fi
        sleep 0.2
    done
}

install_missing() {
    local missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v docker-registry >/dev/null || missing+=(docker-registry)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    command -v curl >/dev/null || missing+=(curl)
    ((${#missing[@]})) || return 0
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

start_engine() {
    if engine_answers; then
        alive "$STATE/dockerd.pid" || say "using the engine that was already running (not ours to stop)"
        return 0
    fi
    say "starting dockerd (log: $STATE/dockerd.log)"
    nohup dockerd --pidfile "$STATE/dockerd.pid" >"$STATE/dockerd.log" 2>&1 &
    wait_for 60 dockerd engine_answers || { tail -20 "$STATE/dockerd.log" >&2; return 1; }
}

start_registry() {
    if registry_answers; then
        alive "$STATE/registry.pid" || say "a registry already answers on 127.0.0.1:$PORT (not ours to stop)"
        return 0
    fi
    local config
    config="$(mktemp -d)/config.yml"
    mkdir -p "$REGISTRY_DATA"
    # Debian's docker-registry is distribution 2.8; loopback only, data kept between runs so
    # that a rebuilt-but-identical image keeps its digest and pushes are incremental.
    cat >"$config" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $REGISTRY_DATA
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$PORT
EOF
    say "starting docker-registry on 127.0.0.1:$PORT (log: $STATE/registry.log)"
    nohup docker-registry serve "$config" >"$STATE/registry.log" 2>&1 &
    echo $! >"$STATE/registry.pid"
    echo "$config" >"$STATE/registry.config"
    wait_for 30 registry registry_answers || { tail -20 "$STATE/registry.log" >&2; return 1; }
}

stop_pidfile() {  # stop_pidfile NAME: stop the process we started, wait for it to go
    local pidfile="$STATE/$1.pid" pid
    alive "$pidfile" || { rm -f "$pidfile"; return 0; }
    pid="$(cat "$pidfile")"
    say "stopping $1 (pid $pid)"
    kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    rm -f "$pidfile"
}

case "${1:-}" in
    start)
        mkdir -p "$STATE"
        install_missing
        start_engine
        start_registry
        echo "$PORT" >"$STATE/registry.port"
        ;;
    stop)
        stop_pidfile registry
        if [[ -s "$STATE/registry.config" ]]; then
            rm -rf "$(dirname "$(cat "$STATE/registry.config")")"
            rm -f "$STATE/registry.config"
        fi
        stop_pidfile dockerd
        ;;
    status)
        if engine_answers; then
            alive "$STATE/dockerd.pid" && echo "engine: running (started by docker.sh, pid $(cat "$STATE/dockerd.pid"))" \
                || echo "engine: running (not started by docker.sh)"
        else
            echo "engine: not running"
        fi
        if registry_answers; then
            alive "$STATE/registry.pid" && echo "registry: 127.0.0.1:$PORT (started by docker.sh, pid $(cat "$STATE/registry.pid"))" \
                || echo "registry: 127.0.0.1:$PORT (not started by docker.sh)"
        else
            echo "registry: not running on 127.0.0.1:$PORT"
        fi
        engine_answers
        ;;
    *)
        echo "usage: $0 start|stop|status" >&2
        exit 2
        ;;
esac
