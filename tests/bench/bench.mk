# make bench: throughput and memory of lapse against limits measured in the
# same run on the same machine (see tests/bench/run), then the scanner and
# split figures (make bench-scanner, tests/bench/scanner.mk), then the
# high-availability ones (make bench-ha: wait_replicas, TLS, failover time),
# the cluster ones (make bench-cluster), lapse-scale status --due against
# millions of pending IDs (make bench-due) and small keys against one sorted
# set per shard (make bench-keys), a shard's slot moving between
# primaries in both forms (make bench-reshard), recovery (make
# bench-watch), the Kafka ingress against the stdin producer and a
# plain Kafka read (make bench-ingress), an online merge against the same
# load without one (make bench-merge), and how well lapse-scale plan
# predicts Redis's CPU (make bench-plan).
# Not part of `make test`. `make bench-producer` runs only the first part.
#
#   make bench                          the default run (N = 1,000,000, 3 rounds)
#   make bench BENCH_N=200000 BENCH_ROUNDS=1   a quick look
#
# Figures go to stdout and to build/bench/last.json.

BENCH_DIR := $(BUILD)/bench
BENCH_GEN := $(BENCH_DIR)/lapse-bench-gen

.PHONY: bench bench-producer bench-ha bench-cluster bench-due bench-keys bench-reshard bench-watch \
        bench-ingress bench-ingress-soak bench-plan bench-console
bench: bench-producer
	@$(MAKE) --no-print-directory bench-scanner
	@$(MAKE) --no-print-directory bench-ha
	@$(MAKE) --no-print-directory bench-cluster
	@$(MAKE) --no-print-directory bench-due
	@$(MAKE) --no-print-directory bench-keys
	@$(MAKE) --no-print-directory bench-reshard
	@$(MAKE) --no-print-directory bench-watch
	@$(MAKE) --no-print-directory bench-ingress
	@$(MAKE) --no-print-directory bench-merge
	@$(MAKE) --no-print-directory bench-plan
bench-producer: all $(BENCH_GEN)
	@LAPSE_BIN=$(BIN) BENCH_GEN=$(BENCH_GEN) tests/bench/run

# Sentinel, WAIT and TLS against the same runs without them (tests/bench/ha-run).
bench-ha: all
	@LAPSE_BIN=$(BIN) tests/bench/ha-run

# A 3-primary Redis Cluster against one plain node (tests/bench/cluster-run).
bench-cluster: all
	@LAPSE_BIN=$(BIN) tests/bench/cluster-run

# lapse-scale status --due's wall time over DUE_N pending IDs (tests/bench/due-run):
#   make bench-due                       1M IDs, 8 shards, 7 runs
#   make bench-due DUE_N=10000000        the documented figure
bench-due: all
	@LAPSE_BIN=$(BIN) tests/bench/due-run

# lapse-console against CONSOLE_N pending IDs over 256 shards: each API
# answer's time, Redis's CPU with 10 pages polling (tests/bench/console-run):
#   make bench-console                   1M IDs
#   make bench-console CONSOLE_N=10000000   the issue's figure
bench-console: all
	@LAPSE_BIN=$(BIN) tests/bench/console-run

# A shard as one sorted set against small keys: bytes per ID, the largest
# key, resets against raw pipelined ZADD (tests/bench/keys-run):
#   make bench-keys                      N = 1,000,000, 11- and 16-byte IDs
#   make bench-keys BENCH_KEYS_BIG=1     10,000,000 too (minutes)
bench-keys: all
	@LAPSE_BIN=$(BIN) tests/bench/keys-run

# One shard of RESHARD_N IDs (1,000,000) moving to another primary of a
# 3-primary cluster, as one sorted set and in small keys: lateness of the
# IDs of other shards due meanwhile, the move's time and longest MIGRATE,
# how long the big shard is not served (tests/bench/reshard-run):
#   make bench-reshard                   N = 1,000,000, 100 keys a MIGRATE
#   make bench-reshard RESHARD_N=100000  a quick look
bench-reshard: all $(BENCH_GEN)
	@LAPSE_BIN=$(BIN) BENCH_GEN=$(BENCH_GEN) tests/bench/reshard-run

# lapse-scale plan's predicted Redis CPU against the measured one, for
# producer loads and fires after plan --calibrate (tests/bench/plan-run):
#   make bench-plan                      N = 1,000,000, 4 shards
#   make bench-plan PLAN_N=200000        a quick look
bench-plan: all
	@LAPSE_BIN=$(BIN) tests/bench/plan-run

# lapse-bench-gen uses libcommon for the documented ID hash and key names.
$(BENCH_GEN): $(BUILD)/tests/bench/gen.o $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# What recovery costs (docs/protocol.md, "Recovered events"), in both shard forms:
# bytes per watched and per offline ID, and how soon recovered events go
# out under a watchdog's stream (tests/bench/watch-run):
#   make bench-watch                        N = 200,000, 20,000 signals/s
#   make bench-watch BENCH_WATCH_N=20000    a quick look
bench-watch: all $(BUILD)/bench/lapse-bench-scanner-feed
	@LAPSE_BIN=$(BIN) SCANNER_BENCH_DIR=$(BUILD)/bench tests/bench/watch-run

# The Kafka ingress (lapse-producer --from-kafka) against the stdin producer
# and a plain Kafka read of the same messages, in the same run, at 8 and 64
# partitions, bounded slack off and on, raw signals and command messages
# (tests/bench/ingress-run):
#   make bench-ingress                               N = 500,000, 3 rounds
#   make bench-ingress BENCH_INGRESS_BASE=DIR        also the lapse-producer of DIR
#                                                    (another commit's bin/) in each round
BENCH_INGRESS_READ := $(BENCH_DIR)/lapse-bench-ingress-read
bench-ingress: all $(BENCH_INGRESS_READ)
	@LAPSE_BIN=$(BIN) BENCH_INGRESS_READ=$(BENCH_INGRESS_READ) tests/bench/ingress-run
bench-ingress-soak: all $(BENCH_INGRESS_READ)
	@LAPSE_BIN=$(BIN) BENCH_INGRESS_READ=$(BENCH_INGRESS_READ) BENCH_INGRESS_SOAK_S=$${BENCH_INGRESS_SOAK_S:-600} tests/bench/ingress-run
$(BENCH_INGRESS_READ): $(BUILD)/tests/bench/ingress_read.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
