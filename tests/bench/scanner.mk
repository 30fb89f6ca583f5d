# make bench-scanner: scanner lateness, scanner throughput against a bare Lua
# loop, and an online split under load, each against limits measured in the
# same run (see tests/bench/scanner-run). Not part of `make test`.
#
#   make bench-scanner                              the default run (~3 min on 2 cores)
#   make bench-scanner SCANNER_BENCH_QUICK=1        smaller sizes, ~1.5 min
#
# Figures go to stdout and to build/bench/scanner.json.

SCANNER_BENCH_DIR := $(BUILD)/bench
SCANNER_BENCH_BINS := $(SCANNER_BENCH_DIR)/lapse-bench-scanner-redis \
                      $(SCANNER_BENCH_DIR)/lapse-bench-scanner-feed \
                      $(SCANNER_BENCH_DIR)/lapse-bench-scanner-stats

.PHONY: bench-scanner
bench-scanner: all $(SCANNER_BENCH_BINS)
	@LAPSE_BIN=$(BIN) SCANNER_BENCH_DIR=$(SCANNER_BENCH_DIR) tests/bench/scanner-run

# The helpers use libcommon for the documented ID hash and key names.
$(SCANNER_BENCH_BINS): $(SCANNER_BENCH_DIR)/lapse-bench-scanner-%: $(BUILD)/tests/bench/scanner_%.o $(LIBS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
