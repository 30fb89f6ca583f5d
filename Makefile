# lapse — one top-level Makefile.
#
# Each directory contributes an object list; common/ becomes a static library
# every program links. Dependencies between headers are generated (-MMD -MP),
# never written by hand.
#
#   make                    build bin/*
#   make test               unit + integration tests (installs deps if needed);
#                           T=0030 runs only the integration tests matching it
#   make run                the embedded demo (local Redis + lapse-kafka-dev)
#   make SANITIZE=address   build with AddressSanitizer (or =undefined)
#   make install            programs, man pages, the producer library, systemd
#                           units; PREFIX (/usr/local), DESTDIR (install.mk)
#   make uninstall          removes what install put there
#   make format             lays the C files out as .clang-format says
#                           (scripts/format-check checks it; .ci/run runs it)

CC      ?= cc
CSTD    := -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L
WARN    := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wno-format-nonliteral
OPT     ?= -O2 -g
CFLAGS  += $(CSTD) $(WARN) $(OPT) -MMD -MP -Icommon -Iproducer/lib -Iproducer/ingress -Iscanner \
           -Itools/scale -Itools/console
LDLIBS  += -lhiredis -lrdkafka -ljansson -lconfig -lxxhash -lssl -lcrypto -lmicrohttpd -lm -lpthread

# Sanitized builds live in their own tree so switching never mixes objects.
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
BUILD   := build/$(SANITIZE)
BIN     := $(BUILD)/bin
# sanitized programs take two to three times the CPU: one test per core
# (tests/run's default is two)
export LAPSE_TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
else
BUILD   := build/plain
BIN     := bin
endif

# Quiet by default; V=1 shows every command.
ifeq ($(V),1)
Q :=
else
Q := @
endif

# The folders are the architecture: common/ (the transport, config, hashing,
# layout, logging: what everything links), producer/lib/ (the producer's core:
# lapse-producer and the installed library liblapse-producer), producer/ingress/
# (the Kafka ingress of lapse-producer), scanner/, tools/scale/ (lapse-scale
# and the operator's helpers it alone uses: split, inspect, health),
# tools/dev/ (stand-ins for Kafka and its tools in development and tests:
# lapse-kafka-dev, -put, -get, lapse-tail; not installed). A folder includes
# only its own headers and those of the folders below it, and no modules
# include each other in a circle (scripts/layers-check, run by .ci/run).
COMMON_SRC   := $(wildcard common/*.c)
LUA_SRC      := $(wildcard common/lua/*.lua)
LUA_LIB      := $(wildcard common/lua/lib/*.lua)
PRODUCER_LIB := $(wildcard producer/lib/*.c)
INGRESS_SRC  := $(wildcard producer/ingress/*.c)
SCANNER_LIB  := $(filter-out scanner/main.c,$(wildcard scanner/*.c))
# A program of tools/dev/ is one file NAME.c (lapse-NAME), or that and parts
# NAME_PART.c linked into it alone (lapse-tail: tail_print.c, rule below).
DEV_PARTS    := $(wildcard tools/dev/*_*.c)
DEV_SRC      := $(filter-out $(DEV_PARTS),$(wildcard tools/dev/*.c))
SCALE_LIB    := $(filter-out tools/scale/main.c,$(wildcard tools/scale/*.c))
CONSOLE_LIB  := $(filter-out tools/console/main.c,$(wildcard tools/console/*.c))
CONSOLE_ASSETS := $(wildcard tools/console/assets/*)
UNIT_SRC     := $(wildcard tests/unit/*.c)

COMMON_OBJ   := $(COMMON_SRC:%.c=$(BUILD)/%.o) $(BUILD)/common/lua_scripts.o
PRODUCER_OBJ := $(PRODUCER_LIB:%.c=$(BUILD)/%.o)
INGRESS_OBJ  := $(INGRESS_SRC:%.c=$(BUILD)/%.o)
SCANNER_OBJ  := $(SCANNER_LIB:%.c=$(BUILD)/%.o)
SCALE_OBJ    := $(SCALE_LIB:%.c=$(BUILD)/%.o)
CONSOLE_OBJ  := $(CONSOLE_LIB:%.c=$(BUILD)/%.o) $(BUILD)/tools/console/assets_data.o

PROGRAMS := $(BIN)/lapse-producer $(BIN)/lapse-scanner $(BIN)/lapse-scale $(BIN)/lapse-console \
            $(DEV_SRC:tools/dev/%.c=$(BIN)/lapse-%)
# The library's example (docs/library.md) and the event consumers of examples/:
# built so they cannot rot, not installed.
EXAMPLES := $(BUILD)/examples/watchdog $(BUILD)/examples/offline
UNIT_BIN := $(BUILD)/tests/unit/run-unit

.PHONY: all test unit run clean deps format
# Every target is kept (no intermediate is deleted): a later make, e.g.
# make install in tests 0700/0710 while other tests run the tools, then has
# nothing to rebuild. Naming targets after .SECONDARY anywhere would end it.
.SECONDARY:
.DELETE_ON_ERROR: # (a generated file cut short by a failed command is not kept)
all: $(PROGRAMS) $(EXAMPLES) lib-build

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# Lua scripts are kept as .lua files for review and embedded as C strings.
$(BUILD)/common/lua_scripts.c: $(LUA_SRC) $(LUA_LIB) scripts/embed-lua scripts/lua-source
	@mkdir -p $(dir $@)
	$(Q)sh scripts/embed-lua $(LUA_SRC) > $@
$(BUILD)/common/lua_scripts.o: $(BUILD)/common/lua_scripts.c
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# The console's pages, script and style are built into lapse-console the
# same way: no files to install beside it, no build step for users.
$(BUILD)/tools/console/assets_data.c: $(CONSOLE_ASSETS) scripts/embed-assets
	@mkdir -p $(dir $@)
	$(Q)sh scripts/embed-assets $(CONSOLE_ASSETS) > $@
$(BUILD)/tools/console/assets_data.o: $(BUILD)/tools/console/assets_data.c
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libcommon.a: $(COMMON_OBJ)
	$(Q)$(AR) rcs $@ $^
$(BUILD)/libproducer.a: $(PRODUCER_OBJ)
	$(Q)$(AR) rcs $@ $^
$(BUILD)/libingress.a: $(INGRESS_OBJ)
	$(Q)$(AR) rcs $@ $^
$(BUILD)/libscanner.a: $(SCANNER_OBJ)
	$(Q)$(AR) rcs $@ $^
$(BUILD)/libscale.a: $(SCALE_OBJ)
	$(Q)$(AR) rcs $@ $^
$(BUILD)/libconsole.a: $(CONSOLE_OBJ)
	$(Q)$(AR) rcs $@ $^

LIBS := $(BUILD)/libscale.a $(BUILD)/libscanner.a $(BUILD)/libingress.a $(BUILD)/libproducer.a \
        $(BUILD)/libcommon.a

$(BIN)/lapse-producer: $(BUILD)/producer/main.o $(LIBS)
	@mkdir -p $(BIN)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BIN)/lapse-scanner: $(BUILD)/scanner/main.o $(LIBS)
	@mkdir -p $(BIN)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BIN)/lapse-scale: $(BUILD)/tools/scale/main.o $(LIBS)
	@mkdir -p $(BIN)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
# lapse-console: tools/console/ on top of tools/scale/'s readers and the
# producer library (its writes)
$(BIN)/lapse-console: $(BUILD)/tools/console/main.o $(BUILD)/libconsole.a $(LIBS)
	@mkdir -p $(BIN)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BIN)/lapse-%: $(BUILD)/tools/dev/%.o $(LIBS)
	@mkdir -p $(BIN)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BIN)/lapse-tail: $(BUILD)/tools/dev/tail_print.o

$(BUILD)/examples/%: $(BUILD)/producer/examples/%.o $(BUILD)/libproducer.a $(BUILD)/libcommon.a
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# examples/offline.c: a consumer of the event topic, librdkafka and jansson only
$(BUILD)/examples/offline: $(BUILD)/examples/offline.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -lrdkafka -ljansson -o $@

$(UNIT_BIN): $(UNIT_SRC:%.c=$(BUILD)/%.o) $(BUILD)/libconsole.a $(LIBS)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

deps:
	@scripts/install-deps

# The test command the README and CI use: unit tests, then integration tests;
# the runner's last line is "N passed, N failed".
test: deps
	@$(MAKE) --no-print-directory all $(UNIT_BIN) nemesis-tools
	@LAPSE_BIN=$(BIN) tests/run $(UNIT_BIN) $(T)

unit: $(UNIT_BIN)
	$(UNIT_BIN)

run: deps
	@$(MAKE) --no-print-directory all
	@LAPSE_BIN=$(BIN) scripts/demo

format:
	@git ls-files '*.c' '*.h' | xargs clang-format-14 -i

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)

# Fuzz targets and benchmarks bring their own rules.
include tests/fuzz/fuzz.mk tests/bench/bench.mk tests/bench/scanner.mk
# The nemesis's workload writer and checker (make nemesis-tools).
include tests/nemesis/nemesis.mk
# The producer library and make install / uninstall.
include install.mk
