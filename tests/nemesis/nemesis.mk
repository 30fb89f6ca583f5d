# The nemesis's tools (tests/nemesis/): the seeded workload writer on the
# producer library, and the checker of a run's history. Built by
# `make nemesis-tools`, on which `make test` depends (tests 0990, 0991 run
# them); the unit tests link the checker's core (tests/unit/test_nemesis.c).
#
#   $(BUILD)/tests/nemesis/nemesis-client   (build/plain/tests/nemesis/...)
#   $(BUILD)/tests/nemesis/nemesis-check

NEMESIS_DIR   := $(BUILD)/tests/nemesis
NEMESIS_TOOLS := $(NEMESIS_DIR)/nemesis-client $(NEMESIS_DIR)/nemesis-check

.PHONY: nemesis-tools
nemesis-tools: $(NEMESIS_TOOLS)

# The client links as the library's examples do: the producer library and
# common, nothing of the scanner or the tools.
$(NEMESIS_DIR)/nemesis-client: $(addprefix $(BUILD)/tests/nemesis/,client.o client_stdin.o client_kafka.o) \
                               $(BUILD)/libproducer.a \
                               $(BUILD)/libcommon.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The checker is lapse-free: jansson only. Its core (all but main) is
# linked into the unit tests too.
NEMESIS_CHECK_OBJ := $(addprefix $(BUILD)/tests/nemesis/,check.o check_rules.o check_load.o)
$(NEMESIS_DIR)/nemesis-check: $(BUILD)/tests/nemesis/check_main.o $(NEMESIS_CHECK_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ -ljansson -lm -o $@

$(UNIT_BIN): $(NEMESIS_CHECK_OBJ)

# make nemesis [SEED=S] [MINUTES=M] [TOPOLOGY=sentinel|cluster]: one run of
# tests/nemesis/run (its records in build/nemesis/TOPOLOGY-SEED); an even
# seed runs on Sentinel, an odd one on a Cluster, unless TOPOLOGY says.
.PHONY: nemesis
nemesis: deps
	@$(MAKE) --no-print-directory all nemesis-tools
	@LAPSE_BIN=$(BIN) tests/nemesis/run --seed $(or $(SEED),1) --minutes $(or $(MINUTES),3) \
		$(if $(TOPOLOGY),--topology $(TOPOLOGY))
