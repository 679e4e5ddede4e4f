#!/usr/bin/env bash
# test_auth.sh - A real Redis that wants a password (requirepass, and an ACL user): the
# service takes its credentials from REDIS_PASSWORD and REDIS_USER or from
# --redis-password-file, for the data Redis and redlock's masters alike; without them, or
# with wrong ones, a sale answers 503 redis_unavailable (not 500) and the log says why,
# never with the password. The secrets here go through files and the environment only.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

PW=pw-$RANDOM-$RANDOM-$RANDOM
USER_PW=up-$RANDOM-$RANDOM
umask 077
printf 'requirepass %s\n' "$PW" > "$T_TMP/redis-auth.conf"
printf '%s\n' "$PW" > "$T_TMP/pass"
P=$(free_port)
mkdir -p "$T_TMP/r"
redis-server "$T_TMP/redis-auth.conf" --port "$P" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$T_TMP/r" --daemonize no > "$T_TMP/r.log" 2>&1 &
T_PIDS="$T_PIDS $!"
export REDISCLI_AUTH=$PW
for _ in $(seq 100); do redis-cli -p "$P" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
redis-cli -p "$P" set "$(item_key stock a)" 100 > /dev/null
printf 'ACL SETUSER seller on >%s ~* &* +@all\n' "$USER_PW" | redis-cli -p "$P" > /dev/null
unset REDISCLI_AUTH
stock() { REDISCLI_AUTH=$PW redis-cli -p "$P" get "$(item_key stock a)"; }
# no_secret PORT: neither password in the instance's argv or its log.
no_secret() {
    grep -qsF -e "$PW" -e "$USER_PW" "$T_TMP/svc-$1.log" "/proc/$2/cmdline" "/proc/$2/environ"
    [ $? = 1 ]   # read every file, found nothing (2: a file missing)
}

check "unauthenticated, Redis refuses" sh -c "redis-cli -p $P get '$(item_key stock a)' 2>&1 | grep -q NOAUTH"

# --- no credentials ------------------------------------------------------------------------
start_service N --redis "127.0.0.1:$P" --name auth-none || exit 1
check_eq "no password set, Redis wants one: 503 (not 500)" 503 "$(sale "$N" a)"
check "  redis_unavailable" jq -e '.error == "redis_unavailable"' "$T_TMP/body"
check "  the log says NOAUTH and that no password is set" \
    grep -q 'NOAUTH.*no password set' "$T_TMP/svc-$N.log"

# --- REDIS_PASSWORD ------------------------------------------------------------------------
REDIS_PASSWORD=$PW start_service E --redis "127.0.0.1:$P" --name auth-env || exit 1
check_eq "REDIS_PASSWORD: sold" 200 "$(sale "$E" a)"
check_eq "  stock 99" 99 "$(stock)"
check "  the password is in neither argv, the environment nor the log" no_secret "$E" "$SVC_PID"

# --- --redis-password-file -----------------------------------------------------------------
start_service F --redis "127.0.0.1:$P" --redis-password-file "$T_TMP/pass" --name auth-file || exit 1
check_eq "--redis-password-file: sold" 200 "$(sale "$F" a)"
check "  the password is in neither argv nor the log" no_secret "$F" "$SVC_PID"
timeout 5 build/inventory-service --redis-password-file "$T_TMP/missing" > /dev/null 2> "$T_TMP/err"; rc=$?
check_eq "a missing password file: exit 2" 2 "$rc"
check "  saying which file and why" grep -q "missing: No such file" "$T_TMP/err"
: > "$T_TMP/empty"
timeout 5 build/inventory-service --redis-password-file "$T_TMP/empty" > /dev/null 2> "$T_TMP/err"; rc=$?
check_eq "an empty password file: exit 2" 2 "$rc"

# --- an ACL user ---------------------------------------------------------------------------
REDIS_USER=seller REDIS_PASSWORD=$USER_PW start_service U --redis "127.0.0.1:$P" --name auth-user || exit 1
check_eq "REDIS_USER and its password (an ACL user): sold" 200 "$(sale "$U" a)"
check "  the password is in neither argv nor the log" no_secret "$U" "$SVC_PID"

# --- wrong credentials ---------------------------------------------------------------------
REDIS_PASSWORD=not-$PW start_service W --redis "127.0.0.1:$P" --name auth-wrong || exit 1
check_eq "a wrong password: 503" 503 "$(sale "$W" a)"
check "  the log says WRONGPASS" grep -q 'WRONGPASS' "$T_TMP/svc-$W.log"
check "  with a Retry-After" sh -c "curl -s -D - -o /dev/null 'http://127.0.0.1:$W/inventory/sale?item=a' | grep -qi '^Retry-After:'"
check_eq "  nothing sold (stock 97 after the three sales above)" 97 "$(stock)"

# --- redlock's masters take the same credentials -------------------------------------------
start_service L --redis "127.0.0.1:$P" --lock v10 --lock-redis "127.0.0.1:$P" \
    --redis-password-file "$T_TMP/pass" --name auth-redlock || exit 1
check_eq "v10 on a master that wants the password: sold" 200 "$(sale "$L" a)"

t_report
