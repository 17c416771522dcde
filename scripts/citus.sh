#!/usr/bin/env bash
# A Citus cluster on localhost for ethos's Citus tests (issue 40): Debian's PostgreSQL 15,
# Citus and pgvector built from the source archives in ../shared/vendor, a coordinator
# and two workers run as an unprivileged user (PostgreSQL refuses root).
#
#   scripts/citus.sh install     apt packages if missing; build and install Citus and
#                                pgvector if `pg_config --pkglibdir` lacks them
#   scripts/citus.sh up          init, start and join the three nodes (nothing if running);
#                                prints the coordinator's URL and writes it to $CITUS_DIR/url
#   scripts/citus.sh db NAME     database NAME on every node, with citus and vector, joined
#   scripts/citus.sh dropdb NAME database NAME dropped on every node
#   scripts/citus.sh down        stop the three nodes (their data stays)
#   scripts/citus.sh destroy     stop them and remove $CITUS_DIR
#   scripts/citus.sh status      the nodes and the workers the coordinator sees
#   scripts/citus.sh url         print the coordinator's URL
#
# Settings (environment): CITUS_DIR (/tmp/ethos-citus), CITUS_PORT (9700: the coordinator,
# workers on the next two ports), CITUS_USER (ethos-pg when run as root, else you),
# CITUS_DB (ethos), VENDOR (../shared/vendor from the repository), PG_MAJOR (15).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PG_MAJOR="${PG_MAJOR:-15}"
PGBIN="/usr/lib/postgresql/$PG_MAJOR/bin"
PG_CONFIG="$PGBIN/pg_config"
VENDOR="${VENDOR:-$REPO/../shared/vendor}"
CITUS_VERSION=13.2.2
PGVECTOR_VERSION=0.8.6
CITUS_SHA256=90bb34b7a7ee4cf097539d50a6fa7996b43ed56574cb0e9fc9d1a69436019f87
PGVECTOR_SHA256=b4eb8abc425b465082ae5955d13df5338c32ec1bd441f0eb86d780e3958766a6
CITUS_DIR="${CITUS_DIR:-/tmp/ethos-citus}"
CITUS_PORT="${CITUS_PORT:-9700}"
CITUS_DB="${CITUS_DB:-ethos}"
HOST=127.0.0.1
NODES=(coordinator worker1 worker2)
if [ "$(id -u)" = 0 ]; then
    CITUS_USER="${CITUS_USER:-ethos-pg}"
else
    CITUS_USER="$(id -un)"
fi
PACKAGES=(
    build-essential "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR"
    libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev libssl-dev
)

say() { printf 'citus: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

port_of() {  # coordinator 9700, worker1 9701, worker2 9702
    case "$1" in
        coordinator) echo "$CITUS_PORT" ;;
        worker1) echo $((CITUS_PORT + 1)) ;;
        worker2) echo $((CITUS_PORT + 2)) ;;
    esac
}

url_of() { echo "postgresql://postgres@$HOST:$(port_of coordinator)/${1:-$CITUS_DB}"; }

as_user() {  # run a command as the servers' user
    if [ "$(id -un)" = "$CITUS_USER" ]; then
        "$@"
    else
        runuser -u "$CITUS_USER" -- "$@"
    fi
}

sql() {  # sql PORT DB STATEMENT: one statement, unaligned tuples only
    psql -X -q -A -t -v ON_ERROR_STOP=1 -h "$HOST" -p "$1" -U postgres -d "$2" -c "$3"
}

# --- install -------------------------------------------------------------------------

missing_packages() {
    local p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' \
            || echo "$p"
    done
}

extension_installed() {  # extension_installed NAME VERSION: its library, its control file at VERSION
    local lib control
    lib="$("$PG_CONFIG" --pkglibdir)/$1.so"
    control="$("$PG_CONFIG" --sharedir)/extension/$1.control"
    [ -f "$lib" ] && [ -f "$control" ] && grep -q "^default_version = '$2'" "$control"
}

citus_installed() { extension_installed citus "$(citus_extversion)"; }

citus_extversion() {  # 13.2.2 is extension version 13.2-1
    local mm="${CITUS_VERSION%.*}"
    echo "$mm-1"
}

unpack() {  # unpack ARCHIVE SHA256 INTO: checked, then extracted; prints the source folder
    local archive="$VENDOR/$1"
    [ -f "$archive" ] || die "no $archive (VENDOR=$VENDOR: the shared/ folder beside the repository)"
    echo "$2  $archive" | sha256sum --check --quiet - >&2 || die "$archive: sha256 differs"
    tar -xzf "$archive" -C "$3"
    find "$3" -mindepth 1 -maxdepth 1 -type d | head -n 1
}

patch_citus() {
    # PostgreSQL 15.x's later minor releases (Debian's 15.20) export
    # have_createdb_privilege(), which Citus 13.2.2 defines itself for PostgreSQL < 16
    # ("static declaration follows non-static declaration"): use the server's.
    local compat="$1/src/include/pg_version_compat.h"
    if grep -q 'extern bool have_createdb_privilege' \
        "$("$PG_CONFIG" --includedir-server)/commands/dbcommands.h"; then
        sed -i 's/^have_createdb_privilege(void)$/citus_unused_have_createdb_privilege(void)/' "$compat"
        say "patched $compat: PostgreSQL $("$PG_CONFIG" --version | cut -d' ' -f2) exports have_createdb_privilege()"
    fi
}

cmd_install() {
    local need start
    need="$(missing_packages)"
    if [ -n "$need" ]; then
        [ "$(id -u)" = 0 ] || die "missing packages (run as root): $(echo $need)"
        say "installing $(echo $need)"
        start=$SECONDS
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $need >/dev/null
        say "packages installed in $((SECONDS - start)) s"
    fi
    [ -x "$PG_CONFIG" ] || die "no $PG_CONFIG after installing postgresql-server-dev-$PG_MAJOR"

    local todo=()
    citus_installed || todo+=(citus)
    extension_installed vector "$PGVECTOR_VERSION" || todo+=(vector)
    if [ ${#todo[@]} = 0 ]; then
        say "citus $CITUS_VERSION and pgvector $PGVECTOR_VERSION are installed in $("$PG_CONFIG" --pkglibdir)"
        return
    fi
    [ "$(id -u)" = 0 ] || die "${todo[*]} not installed in $("$PG_CONFIG" --pkglibdir): run as root"

    local src
    BUILD="$(mktemp -d /tmp/ethos-citus-build.XXXXXX)"
    trap 'rm -rf "$BUILD"' EXIT
    for ext in "${todo[@]}"; do
        start=$SECONDS
        mkdir -p "$BUILD/$ext"
        if [ "$ext" = citus ]; then
            src="$(unpack "citus-$CITUS_VERSION.tar.gz" "$CITUS_SHA256" "$BUILD/$ext")"
            patch_citus "$src"
            say "building citus $CITUS_VERSION in $src"
            (
                cd "$src"
                ./configure PG_CONFIG="$PG_CONFIG" >"$BUILD/citus-configure.log" 2>&1 \
                    || { tail -n 30 "$BUILD/citus-configure.log" >&2; exit 1; }
                make -j2 >"$BUILD/citus-make.log" 2>&1 || { tail -n 40 "$BUILD/citus-make.log" >&2; exit 1; }
                make install >/dev/null
            )
        else
            src="$(unpack "pgvector-$PGVECTOR_VERSION.tar.gz" "$PGVECTOR_SHA256" "$BUILD/$ext")"
            say "building pgvector $PGVECTOR_VERSION in $src"
            (
                cd "$src"
                make -j2 PG_CONFIG="$PG_CONFIG" >"$BUILD/vector-make.log" 2>&1 \
                    || { tail -n 40 "$BUILD/vector-make.log" >&2; exit 1; }
                make install PG_CONFIG="$PG_CONFIG" >/dev/null
            )
        fi
        say "$ext built and installed in $((SECONDS - start)) s"
    done
    rm -rf "$BUILD"
    trap - EXIT
    citus_installed || die "citus is still missing from $("$PG_CONFIG" --pkglibdir)"
    extension_installed vector "$PGVECTOR_VERSION" || die "pgvector is still missing"
}

# --- the cluster ---------------------------------------------------------------------

ensure_user() {
    id -u "$CITUS_USER" >/dev/null 2>&1 && return
    [ "$(id -u)" = 0 ] || die "no user $CITUS_USER"
    say "creating the unprivileged user $CITUS_USER"
    useradd --system --user-group --no-create-home --home-dir "$CITUS_DIR" \
        --shell /usr/sbin/nologin "$CITUS_USER"
}

running() {  # running NODE: a server answers on its port
    "$PGBIN/pg_isready" -q -h "$HOST" -p "$(port_of "$1")" -U postgres -d postgres
}

init_node() {
    local node="$1" dir="$CITUS_DIR/$1" port
    port="$(port_of "$node")"
    [ -f "$dir/PG_VERSION" ] && return
    say "initdb $dir (port $port)"
    rm -rf "$dir"
    as_user "$PGBIN/initdb" -D "$dir" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >/dev/null
    # A throw-away test cluster: durability off, citus preloaded, loopback only.
    cat >>"$dir/postgresql.conf" <<EOF

# scripts/citus.sh
port = $port
listen_addresses = '$HOST'
unix_socket_directories = '$CITUS_DIR'
shared_preload_libraries = 'citus'
citus.enable_statistics_collection = off
max_connections = 200
shared_buffers = 256MB
fsync = off
synchronous_commit = off
full_page_writes = off
max_wal_size = 2GB
log_min_messages = warning
log_line_prefix = '%m [%p] %q%u@%d '
EOF
}

start_node() {
    local node="$1"
    running "$node" && return
    say "starting $node on port $(port_of "$node")"
    as_user "$PGBIN/pg_ctl" -D "$CITUS_DIR/$node" -l "$CITUS_DIR/$node.log" -w -t 60 start >/dev/null \
        || { tail -n 20 "$CITUS_DIR/$node.log" >&2; die "$node did not start"; }
}

cmd_db() {  # a database on every node with both extensions, its workers joined
    local db="$1" node port ext
    for node in "${NODES[@]}"; do
        port="$(port_of "$node")"
        if [ -z "$(sql "$port" postgres "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
            sql "$port" postgres "CREATE DATABASE \"$db\""
        fi
        for ext in citus vector; do  # a worker in the metadata refuses even IF NOT EXISTS
            if [ -z "$(sql "$port" "$db" "SELECT 1 FROM pg_extension WHERE extname = '$ext'")" ]; then
                sql "$port" "$db" "CREATE EXTENSION $ext"
            fi
        done
    done
    port="$(port_of coordinator)"
    sql "$port" "$db" "SELECT citus_set_coordinator_host('$HOST', $port)" >/dev/null
    for node in worker1 worker2; do
        if [ -z "$(sql "$port" "$db" "SELECT 1 FROM pg_dist_node WHERE nodename = '$HOST' AND nodeport = $(port_of "$node")")" ]; then
            sql "$port" "$db" "SELECT citus_add_node('$HOST', $(port_of "$node"))" >/dev/null
        fi
    done
}

cmd_dropdb() {  # the database on every node, gone
    local db="$1" node
    for node in "${NODES[@]}"; do
        running "$node" && sql "$(port_of "$node")" postgres "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)"
    done
    return 0
}

workers_active() {  # the number of workers the coordinator's database sees
    sql "$(port_of coordinator)" "$CITUS_DB" "SELECT count(*) FROM citus_get_active_worker_nodes()" 2>/dev/null || echo 0
}

cmd_up() {
    local node all=1
    for node in "${NODES[@]}"; do running "$node" || all=0; done
    if [ "$all" = 1 ] && [ "$(workers_active)" = 2 ]; then
        say "up: coordinator on $(port_of coordinator), workers on $(port_of worker1) and $(port_of worker2)"
        write_url
        return
    fi
    citus_installed && extension_installed vector "$PGVECTOR_VERSION" \
        || die "citus or pgvector is not installed: run make citus (scripts/citus.sh install) first"
    ensure_user
    mkdir -p "$CITUS_DIR"
    chown "$CITUS_USER:" "$CITUS_DIR"
    chmod 0755 "$CITUS_DIR"
    for node in "${NODES[@]}"; do
        init_node "$node"
        start_node "$node"
    done
    cmd_db "$CITUS_DB"
    [ "$(workers_active)" = 2 ] || die "the coordinator does not see two active workers"
    say "up: coordinator on $(port_of coordinator), workers on $(port_of worker1) and $(port_of worker2) (data in $CITUS_DIR, run as $CITUS_USER)"
    write_url
}

write_url() {
    url_of >"$CITUS_DIR/url.tmp"
    chmod 0644 "$CITUS_DIR/url.tmp"
    mv "$CITUS_DIR/url.tmp" "$CITUS_DIR/url"
    url_of
}

cmd_down() {
    local node
    rm -f "$CITUS_DIR/url"
    for node in coordinator worker1 worker2; do
        if [ -f "$CITUS_DIR/$node/postmaster.pid" ]; then
            say "stopping $node"
            as_user "$PGBIN/pg_ctl" -D "$CITUS_DIR/$node" -m fast -w stop >/dev/null || true
        fi
    done
}

cmd_status() {
    local node
    for node in "${NODES[@]}"; do
        if running "$node"; then echo "$node: up on $HOST:$(port_of "$node")"; else echo "$node: down"; fi
    done
    running coordinator && echo "active workers: $(workers_active)"
    [ -f "$CITUS_DIR/url" ] && echo "url: $(cat "$CITUS_DIR/url")"
    return 0
}

case "${1:-}" in
    install) cmd_install ;;
    up) cmd_up ;;
    db) [ -n "${2:-}" ] || die "usage: $0 db NAME"; cmd_db "$2"; url_of "$2" ;;
    dropdb) [ -n "${2:-}" ] || die "usage: $0 dropdb NAME"; cmd_dropdb "$2" ;;
    down) cmd_down ;;
    destroy) cmd_down; rm -rf "$CITUS_DIR" ;;
    status) cmd_status ;;
    url) url_of ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
