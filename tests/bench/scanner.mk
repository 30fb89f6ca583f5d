# make bench-scanner: scanner lateness, scanner throughput against a bare Lua
# loop, and an online split under load, each against limits measured in the
# same run (see tests/bench/scanner-run); then what 64 and 256 idle scanners
# cost Redis and the host, against the polling scanner of the commit before
# naps, built in a temp worktree (tests/bench/idle-run; alone: make
# bench-idle). Not part of `make test`.
#
#   make bench-scanner                              the default run (~8 min on 2 cores)
#   make bench-scanner SCANNER_BENCH_QUICK=1        smaller sizes, ~1.5 min + idle
#   make bench-scanner BENCH_FORMS=one              sections 0 and 1 with a zset per
#                                                   shard only (default "one small":
#                                                   also in small keys, init --small-keys)
#
# Figures go to stdout and to build/bench/scanner.json, build/bench/idle.json.

SCANNER_BENCH_DIR := $(BUILD)/bench
SCANNER_BENCH_BINS := $(SCANNER_BENCH_DIR)/lapse-bench-scanner-redis \
                      $(SCANNER_BENCH_DIR)/lapse-bench-scanner-feed \
                      $(SCANNER_BENCH_DIR)/lapse-bench-scanner-stats

.PHONY: bench-scanner bench-idle bench-merge
bench-scanner: all $(SCANNER_BENCH_BINS)
	@LAPSE_BIN=$(BIN) SCANNER_BENCH_DIR=$(SCANNER_BENCH_DIR) tests/bench/scanner-run
	@LAPSE_BIN=$(BIN) tests/bench/idle-run
bench-idle: all
	@LAPSE_BIN=$(BIN) tests/bench/idle-run
# An online merge (16 -> 8 shards, 1M pending, 10k due/s) against the same
# load without one (tests/bench/merge-run).
bench-merge: all $(SCANNER_BENCH_BINS)
	@LAPSE_BIN=$(BIN) SCANNER_BENCH_DIR=$(SCANNER_BENCH_DIR) tests/bench/merge-run

# The helpers use libcommon for the documented ID hash and key names.
$(SCANNER_BENCH_BINS): $(SCANNER_BENCH_DIR)/lapse-bench-scanner-%: $(BUILD)/tests/bench/scanner_%.o $(LIBS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
