# Makefile - build, test, demo and install the inventory service and its lock library.
#
#   make                  build build/inventory-service (and the test and load tools)
#   make test             install what is missing, build, run every test
#   make demo             install what is missing, build, show the evolution on local stacks:
#                         each version's flaw and the next one's fix, in under 4 minutes
#                         (FULL=1: every row, two at a time where they may share the
#                         machine, test hosts, a Redis Cluster, ZooKeeper and MariaDB
#                         included; LIVE=1: watch it on the live page,
#                         http://127.0.0.1:8090/live; LIVE=check: and measure that page,
#                         open in headless Chromium)
#   make bench            install what is missing, build, run loadtest/bench (speed, side by side)
#   make compare          install what is missing, build, run loadtest/compare (every design's
#                         speed and failures side by side: the table of docs/choosing.md)
#   make fuzz             fuzz the service's parsers and the load client's answer parser with
#                         libFuzzer (clang), each for FUZZ_SECONDS (300)
#   make model            install what is missing, model-check v3 to v14 with SPIN (model/check)
#   make install          copy the binary to $(DESTDIR)$(PREFIX)/bin
#   SANITIZER=address,undefined | thread   checked builds (work with make test)
#   WERROR=0              do not turn warnings into errors (for packagers)

PREFIX   ?= /usr/local
# The build before a test, demo, bench or compare run: one compiler a core, unless
# make was given -j itself (its jobs then shared; read when the recipe runs, as make sets
# MAKEFLAGS' -j after reading this file). A clean build on 2 cores: 22 s in turn,
# 10 s two at a time.
BUILD_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))
CC       ?= cc
WERROR   ?= 1
SANITIZER ?=
PKGS     := libmicrohttpd hiredis jansson libmariadb

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wformat=2
ifeq ($(WERROR),1)
WARN     += -Werror
endif
# CFLAGS and LDFLAGS are the user's (make CFLAGS=-O0 still builds); the project's own
# flags live apart, as redis's FINAL_CFLAGS do.
CFLAGS   ?= -O2 -g
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
FINAL_CFLAGS  := -std=c11 -D_GNU_SOURCE $(WARN) -pthread -Ibuild -I. $(PKG_CFLAGS) $(CFLAGS)
FINAL_LDFLAGS := $(LDFLAGS)
ifneq ($(SANITIZER),)
FINAL_CFLAGS  += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer
FINAL_LDFLAGS += -fsanitize=$(SANITIZER)
endif
FINAL_LIBS := $(PKG_LIBS) -lzookeeper_mt -pthread $(LDLIBS)

COMMON_SRC  := $(wildcard common/*.c)
LOCK_SRC    := $(wildcard lock/*.c redis/*.c zk/*.c db/*.c)
SERVICE_SRC := $(wildcard service/*.c service/*/*.c)
LUA_SRC     := $(wildcard lock/scripts/*.lua service/store/scripts/*.lua)
COMMON_OBJ  := $(COMMON_SRC:%.c=build/%.o)
LOCK_OBJ    := $(LOCK_SRC:%.c=build/%.o) $(COMMON_OBJ)
SERVICE_OBJ := $(SERVICE_SRC:%.c=build/%.o)
HEADERS     := $(wildcard common/*.h lock/*.h redis/*.h zk/*.h db/*.h service/*.h service/*/*.h loadtest/*.h tests/*.h) \
               build/lua_scripts.h build/script_args.h build/live_html.h

.PHONY: all test demo bench compare fuzz model deps install clean
all: build/inventory-service build/test_lock build/test_redis build/test_cluster build/test_store \
     build/test_db \
     build/test_dblock \
     build/zk_lock build/zk-ceiling build/db-ceiling $(if $(wildcard loadtest/report.c),build/evolution-report) \
     $(if $(wildcard loadtest/load.c),build/sale-load) \
     $(if $(wildcard loadtest/clockstep.c),build/clockstep.so)

# Rebuild everything when the flags change (a sanitizer build after a plain one).
build/.flags: FORCE
	@mkdir -p build
	@echo '$(CC) $(FINAL_CFLAGS) $(FINAL_LDFLAGS)' | cmp -s - $@ || echo '$(CC) $(FINAL_CFLAGS) $(FINAL_LDFLAGS)' > $@
FORCE:

# Every lock/scripts/NAME.lua and service/store/scripts/NAME.lua becomes `lua_NAME`, a struct
# rd_script with its SHA1, and its KEYS and ARGV get names in C (lock/scripts/embed says
# how); build/scripts/NAME.lua is each script whole, its included prelude in place.
build/lua_scripts.h: $(LUA_SRC) lock/scripts/embed Makefile
	@lock/scripts/embed build $(LUA_SRC)
build/script_args.h: build/lua_scripts.h

# The live page, built into the binary: service/events/live.html as a C string (live_html).
build/live_html.h: service/events/live.html
	@mkdir -p build
	@{ echo '/* from service/events/live.html by the Makefile */'; echo 'static const char live_html[] = {'; \
	   od -An -v -tx1 $< | sed -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0 };'; } > $@.tmp && mv $@.tmp $@

build/%.o: %.c $(HEADERS) build/.flags
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -c -o $@ $<

build/inventory-service: $(SERVICE_OBJ) $(LOCK_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

build/test_lock: build/tests/test_lock.o $(LOCK_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

build/test_redis: build/tests/test_redis.o $(LOCK_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

build/test_cluster: build/tests/test_cluster.o $(LOCK_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

# The database's lock versions (v12 to v15), on a private mariadbd (tests/test_dblock.sh).
build/test_dblock: build/tests/test_dblock.o $(LOCK_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

# The database layer's test, on a private mariadbd (tests/test_db.sh starts it).
build/test_db: build/tests/test_db.o $(LOCK_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

# The ensemble's own ceiling (loadtest/bench's zk-ceiling mode): one node set as fast as can be.
build/zk-ceiling: build/loadtest/zk_ceiling.o $(COMMON_OBJ) $(filter build/zk/%,$(LOCK_OBJ))
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

# The database's own ceiling (loadtest/bench's db-ceiling mode): one-row commits as fast as can be.
build/db-ceiling: build/loadtest/db_ceiling.o $(COMMON_OBJ) $(filter build/db/%,$(LOCK_OBJ))
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

# v11's lock alone, for the interop test with another ZooKeeper client (tests/zk_interop.py).
build/zk_lock: build/tests/zk_lock.o $(LOCK_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

# The store seam's test: the store and what it stands on, without the HTTP side.
STORE_OBJ := $(filter build/service/store/% build/service/config/%,$(SERVICE_OBJ)) \
             build/service/sale/answer.o build/service/log.o build/service/parse.o
build/test_store: build/tests/test_store.o $(STORE_OBJ) $(LOCK_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS)

# The fuzz target: service/parse.c under libFuzzer, ASan and UBSan (clang only).
FUZZ_SECONDS ?= 300
build/fuzz_parse: tests/fuzz_parse.c service/parse.c common/item.c $(HEADERS)
	@mkdir -p build
	clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE -I. -Ibuild \
	    $(PKG_CFLAGS) -o $@ tests/fuzz_parse.c service/parse.c common/item.c

# The load client's answer parser, loadtest/answer.c, the same way (a UB report stops it).
build/fuzz_answer: tests/fuzz_answer.c loadtest/answer.c $(HEADERS)
	@mkdir -p build
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=c11 \
	    -D_GNU_SOURCE -I. -o $@ tests/fuzz_answer.c loadtest/answer.c

fuzz: deps build/fuzz_parse build/fuzz_answer
	@mkdir -p build/fuzz_corpus build/fuzz_corpus_answer
	build/fuzz_parse -max_total_time=$(FUZZ_SECONDS) build/fuzz_corpus tests/fuzz_corpus
	build/fuzz_answer -max_total_time=$(FUZZ_SECONDS) build/fuzz_corpus_answer tests/fuzz_corpus_answer

REPORT_OBJ := $(patsubst %,build/loadtest/%.o,report report_measures report_bars report_timeline \
                                              report_moment report_html)
build/evolution-report: $(REPORT_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS) -lm

# The load client that records a sale history (loadtest/load.c says why wrk cannot).
LOAD_OBJ := $(patsubst %,build/loadtest/%.o,load load_conn answer load_opts load_target load_record load_hist)
build/sale-load: $(LOAD_OBJ) $(COMMON_OBJ)
	$(CC) $(FINAL_LDFLAGS) -o $@ $^ $(FINAL_LIBS) -lm

# The preload the clock-jump scenarios put before libfaketime (loadtest/clockstep.c says
# why): no sanitizer, which would have to be loaded first.
build/clockstep.so: loadtest/clockstep.c build/.flags
	@mkdir -p build
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) -fPIC -shared -pthread $(CFLAGS) $(LDFLAGS) -o $@ $< -ldl

deps:
	@deploy/install-deps

test: deps
	@$(MAKE) --no-print-directory $(BUILD_JOBS) all
	@tests/run

demo: deps
	@$(MAKE) --no-print-directory $(BUILD_JOBS) all
	@loadtest/evolution $(if $(filter 1,$(FULL)),$(if $(LIVE),,--jobs 2),--demo) $(if $(filter 1,$(LIVE)),--live) $(if $(filter check,$(LIVE)),--live-check)

bench: deps
	@$(MAKE) --no-print-directory $(BUILD_JOBS) all
	@loadtest/bench $(BENCH_ARGS)

compare: deps
	@$(MAKE) --no-print-directory $(BUILD_JOBS) all
	@loadtest/compare $(COMPARE_ARGS)

model: deps
	@model/check

install: build/inventory-service
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 build/inventory-service $(DESTDIR)$(PREFIX)/bin/inventory-service

clean:
	rm -rf build
