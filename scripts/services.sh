#!/usr/bin/env bash
# Makes sure the services relaykit's tests talk to are up: PostgreSQL, Redis, RabbitMQ.
# Started when installed and stopped; installed with apt-get when missing and running as root;
# otherwise the script stops and says how to get them. Sourced by ./relaykit.
#
# Each service is checked on its loopback port (or the RELAYKIT_*_URL/URI override's host:port).

set -u

svc_log() { printf '[relaykit] %s\n' "$*" >&2; }

# port_open HOST PORT: true when something accepts TCP connections there.
port_open() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && { exec 3>&- 3<&-; return 0; }
  return 1
}

# wait_port NAME HOST PORT SECONDS
wait_port() {
  local name=$1 host=$2 port=$3 secs=$4 i
  for ((i = 0; i < secs * 5; i++)); do
    port_open "$host" "$port" && return 0
    sleep 0.2
  done
  svc_log "$name did not come up on $host:$port within ${secs}s"
  return 1
}

is_root() { [ "$(id -u)" = 0 ]; }

APT_UPDATED=0
apt_install() {
  if ! is_root || ! command -v apt-get >/dev/null 2>&1; then
    return 1
  fi
  if [ "$APT_UPDATED" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
    APT_UPDATED=1
  fi
  svc_log "installing $* with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_postgres() {
  local host=127.0.0.1 port=5432
  if port_open $host $port; then return 0; fi
  local installed=0
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    installed=1
    apt_install postgresql || {
      svc_log "PostgreSQL is not running on $host:$port and is not installed."
      svc_log "Install it (apt-get install postgresql) or set RELAYKIT_POSTGRES_URL."
      return 1
    }
  fi
  local version
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
  if [ -z "$version" ]; then
    svc_log "PostgreSQL is installed but has no cluster under /etc/postgresql"
    return 1
  fi
  # A cluster we just installed gets what the tests expect of a test machine: user postgres over
  # loopback TCP without a password. An existing cluster's configuration is left alone.
  local hba="/etc/postgresql/$version/main/pg_hba.conf"
  if [ "$installed" = 1 ] && [ -w "$hba" ]; then
    sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  fi
  svc_log "starting PostgreSQL $version"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_port PostgreSQL $host $port 30
}

ensure_redis() {
  local host=127.0.0.1 port=6379
  if port_open $host $port; then return 0; fi
  if ! command -v redis-server >/dev/null 2>&1; then
    apt_install redis-server || {
      svc_log "Redis is not running on $host:$port and is not installed."
      svc_log "Install it (apt-get install redis-server) or set RELAYKIT_REDIS_URI."
      return 1
    }
  fi
  svc_log "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  local dir=/var/lib/redis logfile=/var/log/redis/ci.log
  [ -w "$dir" ] || { dir=$(mktemp -d); logfile=$dir/redis.log; }
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port $port --save "" \
    --appendonly no --dir "$dir" --logfile "$logfile"
  wait_port Redis $host $port 20
}

ensure_rabbitmq() {
  local host=127.0.0.1 port=5672
  if port_open $host $port; then return 0; fi
  if ! command -v rabbitmq-server >/dev/null 2>&1; then
    apt_install rabbitmq-server || {
      svc_log "RabbitMQ is not running on $host:$port and is not installed."
      svc_log "Install it (apt-get install rabbitmq-server) or set RELAYKIT_RABBITMQ_URI."
      return 1
    }
  fi
  svc_log "starting RabbitMQ"
  RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 ERL_EPMD_ADDRESS=127.0.0.1 rabbitmq-server -detached \
    >/dev/null 2>&1 || true
  wait_port RabbitMQ $host $port 90
}

ensure_chromium() {
  if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    return 0
  fi
  apt_install chromium chromium-driver || {
    svc_log "Chromium and ChromeDriver are needed for the browser test."
    svc_log "Install them: apt-get install --no-install-recommends chromium chromium-driver"
    return 1
  }
}

# libfaketime_path: prints the path of Debian's libfaketime.so.1 (RELAYKIT_LIBFAKETIME overrides).
# The same lookup as io.relaykit.examples.Faketime.library().
libfaketime_path() {
  local f
  if [ -n "${RELAYKIT_LIBFAKETIME:-}" ]; then
    [ -f "$RELAYKIT_LIBFAKETIME" ] && { printf '%s\n' "$RELAYKIT_LIBFAKETIME"; return 0; }
    return 1
  fi
  for f in /usr/lib/*-linux-gnu/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
    [ -f "$f" ] && { printf '%s\n' "$f"; return 0; }
  done
  return 1
}

# ensure_faketime: libfaketime for the chaos runs' clock fault (an instance started with its
# clock skewed from outside the process). Quiet and idempotent: installs Debian's faketime
# package only when the library is missing.
ensure_faketime() {
  libfaketime_path >/dev/null && return 0
  local err
  err=$(mktemp)
  svc_log "installing faketime (libfaketime, for the clock fault) with apt-get"
  # apt's own chatter ("debconf: delaying package configuration ...") is shown only on failure.
  apt_install faketime 2>"$err" || {
    cat "$err" >&2
    rm -f "$err"
    svc_log "libfaketime is needed for the clock fault: apt-get install faketime"
    return 1
  }
  rm -f "$err"
  libfaketime_path >/dev/null || {
    svc_log "the faketime package is installed but libfaketime.so.1 was not found"
    return 1
  }
}

# ensure_gpg: gpg, which ReleaseBundleTest (architecture-tests) runs to sign and verify the
# release bundle with a throwaway key. Installs Debian's gnupg package only when gpg is missing.
ensure_gpg() {
  command -v gpg >/dev/null 2>&1 && command -v gpgconf >/dev/null 2>&1 && return 0
  apt_install gnupg >/dev/null 2>&1 || {
    svc_log "the release test needs gpg: apt-get install gnupg"
    return 1
  }
}

# ensure_services: every service the default test run needs. Overrides skip the local check.
ensure_services() {
  local ok=0
  if [ -z "${RELAYKIT_POSTGRES_URL:-}" ]; then ensure_postgres || ok=1; fi
  if [ -z "${RELAYKIT_REDIS_URI:-}" ]; then ensure_redis || ok=1; fi
  if [ -z "${RELAYKIT_RABBITMQ_URI:-}" ]; then ensure_rabbitmq || ok=1; fi
  return $ok
}
