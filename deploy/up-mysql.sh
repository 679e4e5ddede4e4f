# up-mysql.sh - deploy/up's MariaDB: its own mariadbd (started here, never the system's
# service) with its configuration and data directory under the run directory, and the
# service's user `inventory`@127.0.0.1 with a random password kept in a file.
# Sourced by deploy/up (and by the tests that start a server the same way, after
# deploy/lib.sh and deploy/up-redis.sh: new_secret); functions only. They read MYSQL_PORT,
# MYSQL_BIND, MYSQL_FLUSH (innodb_flush_log_at_trx_commit: 1, 0 or 2), RUN_DIR and
# START_WAIT_S; set MYSQL_CONNECT and MYSQL_PASSWORD_FILE, which stack.env records; add the
# server to STARTED_PIDS (deploy/lib.sh's mysql_server_run); and exit through deploy/lib.sh's
# die or fail_with_log when the server does not come up: deploy/up's rollback then stops
# what was started.
#
# The files, in RUN_DIR: mysql/my.cnf (written afresh by every start: the port and the
# flush setting may change), mysql/data (made once, a copy of the template that
# mariadb-install-db made, and kept across starts, as ZooKeeper's data is),
# mysql/password (mode 600, kept with the data: the user has it), mysql.pid
# (deploy/down's), mysql.log (the server's error log).

MYSQL_INSTALL_BIN=${MYSQL_INSTALL_BIN:-mariadb-install-db}
MYSQL_DB_NAME=${MYSQL_DB_NAME:-inventory}      # the user's database (the service's --mysql-db)
MYSQL_USER_NAME=${MYSQL_USER_NAME:-inventory}  # the user made for the instances

# mysql_check: true when a server can be started here; else says why (what is missing and
# its Debian package) on stdout and fails.
mysql_check() {
    local b
    [ -x "$(mysql_server_bin)" ] ||
        { echo "mariadbd not found (Debian package mariadb-server; make deps)"; return 1; }
    for b in "$MYSQL_INSTALL_BIN" mariadb mariadb-admin; do
        command -v "$b" >/dev/null ||
            { echo "$b not found (Debian packages mariadb-server, mariadb-client; make deps)"
              return 1; }
    done
}

# write_mysql_conf DIR: the server's configuration, to stdout: its data, socket and pid
# file in DIR, its port and address, the flush setting, its error log RUN_DIR/mysql.log;
# as root, --user=root (mariadbd refuses root without it).
write_mysql_conf() {
    local dir=$1 sock=$1/sock
    # A unix socket's path is at most 107 bytes: a deep run directory gets one in TMPDIR.
    [ ${#sock} -le 100 ] || sock=${TMPDIR:-/tmp}/mariadbd-$MYSQL_PORT.sock
    cat <<EOF
# my.cnf - written by deploy/up for this run directory; edit deploy/up-mysql.sh, not this file.
[mariadbd]
$([ "$(id -u)" != 0 ] || echo "user=root")
datadir=$dir/data
port=$MYSQL_PORT
bind-address=$MYSQL_BIND
socket=$sock
pid-file=$dir/mariadbd.pid
log-error=$RUN_DIR/mysql.log
skip-name-resolve
# 1: every commit is in the redo log, synced to disk, before it is acknowledged (InnoDB's
# default); 0 and 2 (deploy/up --mysql-flush) sync about once a second: a crash of the
# server (0) or of the machine (2) loses the last second's commits.
innodb-flush-log-at-trx-commit=$MYSQL_FLUSH
innodb-buffer-pool-size=64M
max-connections=400
EOF
}

# mysql_install DIR: the data directory DIR/data, once: kept when an earlier start made it
# (DIR/installed), made afresh when one was cut short. A copy of MYSQL_TEMPLATE (default
# build/mysql-template: made by mariadb-install-db the first time, for this mariadbd's
# version, under a lock: stacks side by side make it once), not a new install for each
# stack: the install took seconds a stack, and the evolution starts a server a row.
MYSQL_TEMPLATE=${MYSQL_TEMPLATE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/mysql-template}
mysql_install() {
    local dir=$1 version
    [ ! -f "$dir/installed" ] || return 0
    rm -rf "$dir/data"
    mkdir -p "$dir" || die "cannot create $dir"
    version=$("$(mysql_server_bin)" --version 2>/dev/null)
    mark_log "$RUN_DIR/mysql.log"
    { flock 9
      if [ "$(cat "$MYSQL_TEMPLATE/version" 2>/dev/null)" != "$version" ]; then
          mysql_install_into "$MYSQL_TEMPLATE.new" && rm -rf "$MYSQL_TEMPLATE" &&
              mv "$MYSQL_TEMPLATE.new" "$MYSQL_TEMPLATE" && echo "$version" > "$MYSQL_TEMPLATE/version"
      fi
    } 9> "$MYSQL_TEMPLATE.lock" 2>/dev/null
    if [ "$(cat "$MYSQL_TEMPLATE/version" 2>/dev/null)" = "$version" ]; then
        cp -a "$MYSQL_TEMPLATE/data" "$dir/data" ||
            die "cannot copy the data directory $MYSQL_TEMPLATE/data to $dir"
    else   # (no room for the template: build/ not writable) one of its own
        mysql_install_into "$dir" ||
            fail_with_log "mariadb-install-db (the data directory $dir/data)" "$RUN_DIR/mysql.log"
    fi
    touch "$dir/installed"
}
# mysql_install_into DIR: mariadb-install-db's data directory in DIR/data (its output in
# RUN_DIR/mysql.log); fails when it does.
mysql_install_into() {
    local user=()
    [ "$(id -u)" != 0 ] || user=(--user=root)
    rm -rf "$1" && mkdir -p "$1" || return 1
    "$MYSQL_INSTALL_BIN" --no-defaults "${user[@]}" --datadir="$1/data" \
        --auth-root-authentication-method=normal --skip-test-db >> "$RUN_DIR/mysql.log" 2>&1
}

# mysql_user DIR: the instances' user MYSQL_USER_NAME@127.0.0.1, its password in
# DIR/password (made once, mode 600; kept with the data), ALL on MYSQL_DB_NAME.* (CREATE
# among them: the service makes its database and tables). The statements go to the client
# on stdin: the password is never in argv. Sets MYSQL_PASSWORD_FILE.
mysql_user() {
    local pw u="'$MYSQL_USER_NAME'@'127.0.0.1'"
    MYSQL_PASSWORD_FILE=$1/password
    [ -s "$MYSQL_PASSWORD_FILE" ] || new_secret "$MYSQL_PASSWORD_FILE"
    chmod 600 "$MYSQL_PASSWORD_FILE"
    pw=$(head -n 1 "$MYSQL_PASSWORD_FILE")    # base64url: no quote to escape
    { printf "CREATE USER IF NOT EXISTS %s IDENTIFIED BY '%s';\n" "$u" "$pw"
      printf "ALTER USER %s IDENTIFIED BY '%s';\n" "$u" "$pw"
      printf 'GRANT ALL ON `%s`.* TO %s;\n' "$MYSQL_DB_NAME" "$u"; } | mdb_sql ||
        fail_with_log "the user $u on the server (mariadb as root)" "$RUN_DIR/mysql.log"
}

# start_mysql: the server, in RUN_DIR/mysql (installed there once), on MYSQL_BIND and
# MYSQL_PORT, waited for until it answers as root (START_WAIT_S at most); then the
# instances' user. Sets MYSQL_CONNECT and MYSQL_PASSWORD_FILE.
start_mysql() {
    local dir=$RUN_DIR/mysql
    mysql_install "$dir"
    (umask 077; write_mysql_conf "$dir" > "$dir/my.cnf") || die "cannot write $dir/my.cnf"
    MYSQL_CONNECT=$(local_host "$MYSQL_BIND"):$MYSQL_PORT
    mark_log "$RUN_DIR/mysql.log"
    mysql_server_run "$RUN_DIR"
    wait_until "$START_WAIT_S" "$MYSQL_STARTED_PID" mysql_pings ||
        fail_with_log "mariadbd on port $MYSQL_PORT" "$RUN_DIR/mysql.log"
    mysql_user "$dir"
}
