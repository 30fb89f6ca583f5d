# The nemesis's tools (tests/nemesis/): the seeded workload writer on the
# producer library. Built by `make nemesis-tools`, on which `make test`
# depends, so the tests can run it.
#
#   $(BUILD)/tests/nemesis/nemesis-client   (build/plain/tests/nemesis/...)

NEMESIS_DIR   := $(BUILD)/tests/nemesis
NEMESIS_TOOLS := $(NEMESIS_DIR)/nemesis-client

.PHONY: nemesis-tools
nemesis-tools: $(NEMESIS_TOOLS)

# The client links as the library's examples do: the producer library and
# common, nothing of the scanner or the tools.
$(NEMESIS_DIR)/nemesis-client: $(BUILD)/tests/nemesis/client.o $(BUILD)/libproducer.a \
                               $(BUILD)/libcommon.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
