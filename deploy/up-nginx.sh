# up-nginx.sh - deploy/up's nginx: its configuration, its start, the health check through it.
# Sourced by deploy/up; functions only, which read its settings (SERVERS, NGINX_BIND,
# NGINX_HOST, NGINX_PORT, NGINX_WORKERS, NGINX_CONNECTIONS, UPSTREAM_KEEPALIVE, NGINX_BIN,
# RUN_DIR, START_WAIT_S). nginx runs without root: every path it writes is under RUN_DIR.

# write_nginx_conf: the whole configuration, every path under the run directory.
write_nginx_conf() {
    local s user=""
    # As root, nginx would run its workers as nobody, who may not enter the run
    # directory; keep them as the user who started the stack.
    [ "$(id -u)" != 0 ] || user="user $(id -un);"
    mkdir -p "$RUN_DIR/nginx"
    cat <<EOF
# nginx.conf - written by deploy/up for this run directory; edit deploy/up-nginx.sh, not this file.
$user
worker_processes $NGINX_WORKERS;
daemon on;
pid $RUN_DIR/nginx.pid;
error_log $RUN_DIR/nginx-error.log warn;

events { worker_connections $NGINX_CONNECTIONS; }

http {
    access_log off;
    client_body_temp_path $RUN_DIR/nginx/client_body;
    proxy_temp_path       $RUN_DIR/nginx/proxy;
    fastcgi_temp_path     $RUN_DIR/nginx/fastcgi;
    uwsgi_temp_path       $RUN_DIR/nginx/uwsgi;
    scgi_temp_path        $RUN_DIR/nginx/scgi;
    keepalive_requests 1000000;       # a load generator keeps its connections

    # Every answer a client sees is one the service could give: nginx's own errors are
    # JSON too. No answer from the instance (502, 504): if the request reached it, the
    # sale may be done (outcome_unknown: retry with the same Idempotency-Key); if nothing
    # was sent, it is not (instance_unavailable). The client's key is echoed only when
    # it is a plain token, as the instances accept it.
    map \$upstream_bytes_sent \$no_answer_error {
        ""      instance_unavailable;
        "0"     instance_unavailable;
        default outcome_unknown;
    }
    map \$http_idempotency_key \$idem_json {
        "~^[A-Za-z0-9._:=+/-]{1,64}\$" ',"idempotency_key":"\$http_idempotency_key"';
        default "";
    }

    upstream inventory {              # round robin, the default
EOF
    for s in $SERVERS; do echo "        server $s;"; done
    cat <<EOF
        keepalive $UPSTREAM_KEEPALIVE;             # idle connections kept per worker
        keepalive_requests 1000000;
        keepalive_timeout 60s;        # below the service's 120 s idle timeout
    }
    # The same instances for /events, never marked down (max_fails=0): a page's new
    # stream tries each in turn, so it finds one as soon as any is up again, even after
    # every instance restarted in a row (above, a failed server rests fail_timeout, 10 s).
    upstream inventory_events {
EOF
    for s in $SERVERS; do echo "        server $s max_fails=0;"; done
    cat <<EOF
        keepalive 4;
    }

    server {
        listen $NGINX_BIND:$NGINX_PORT;
        location / {
            proxy_pass http://inventory;
            proxy_http_version 1.1;
            proxy_set_header Connection "";   # keep the upstream connection open
            proxy_next_upstream off;          # a sale is not idempotent: never resend it
            proxy_read_timeout 120s;          # a sale may wait for its lock
            proxy_set_header X-Request-Id \$request_id;   # in the instance's log and ledger
            add_header X-Upstream \$upstream_addr always;
            error_page 502 504 =503 @no_answer;
            error_page 400 413 414 494 =400 /.bad_request;   # (not inherited once set here)
        }
        # The live page's stream (Server-Sent Events): passed on as it comes, never
        # buffered; it is a read, so an instance that is down or refuses it (503: its
        # streams are full, or it is stopping) is skipped for the next one: a browser's
        # EventSource gives up for good on an answer other than 200.
        location = /events {
            proxy_pass http://inventory_events;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_cache off;
            proxy_read_timeout 60s;           # the stream sends a heartbeat every 2 s
            proxy_next_upstream error timeout http_502 http_503 http_504;
            proxy_next_upstream_tries 0;
            add_header X-Upstream \$upstream_addr always;
        }
        error_page 400 413 414 494 =400 /.bad_request;  # refused before any location
        location @no_answer {
            default_type application/json;
            add_header Retry-After 1 always;
            add_header X-Upstream \$upstream_addr always;
            return 503 '{"ok":false,"error":"\$no_answer_error","request_id":"\$request_id"\$idem_json}';
        }
        location = /.bad_request {
            internal;
            default_type application/json;
            return 400 '{"ok":false,"error":"bad_request","message":"nginx refused the request (malformed or too large)"}';
        }
    }
}
EOF
}

# healthy_through_nginx: true once every upstream server has answered /health with 200.
healthy_through_nginx() {
    local want seen="" addr
    set -- $SERVERS; want=$#
    for _ in $(seq $((want * 2 + 2))); do
        addr=$(curl -s -m 2 -o /dev/null -D - "http://$NGINX_HOST:$NGINX_PORT/health" -w '%{http_code}\n' |
               awk 'tolower($1) == "x-upstream:" { a = $2 } /^200$/ { gsub("\r", "", a); print a }')
        [ -z "$addr" ] || case " $seen " in *" $addr "*) ;; *) seen="$seen $addr" ;; esac
        set -- $seen
        [ $# -lt "$want" ] || return 0
    done
    return 1
}

# start_nginx: writes RUN_DIR/nginx.conf, starts nginx and waits until every upstream
# server has answered /health through it; exits 1, showing why, when it does not.
start_nginx() {
    local s
    write_nginx_conf > "$RUN_DIR/nginx.conf"
    mark_log "$RUN_DIR/nginx-error.log"
    # nginx checks the configuration and binds before it daemonizes: errors come back here.
    if ! "$NGINX_BIN" -p "$RUN_DIR/nginx" -c "$RUN_DIR/nginx.conf" -e "$RUN_DIR/nginx-error.log" \
        </dev/null >>"$RUN_DIR/nginx-error.log" 2>&1; then
        # Its port taken since deploy/up looked (another program's start): exit 3, the
        # caller may draw another port.
        tail -n 3 "$RUN_DIR/nginx-error.log" | grep -q 'Address already in use' &&
            { echo "deploy/up: port $NGINX_PORT (nginx, --port) was taken as nginx started; choose another" >&2; exit 3; }
        fail_with_log "nginx on port $NGINX_PORT" "$RUN_DIR/nginx-error.log"
    fi
    wait_until "$START_WAIT_S" "" test -s "$RUN_DIR/nginx.pid" ||
        fail_with_log "nginx (no pid file)" "$RUN_DIR/nginx-error.log"
    wait_until "$START_WAIT_S" "" healthy_through_nginx || {
        echo "deploy/up: not every instance answered /health through nginx:" >&2
        for s in $SERVERS; do
            echo "  $s: $(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$s/health")" >&2
        done
        exit 1
    }
}
