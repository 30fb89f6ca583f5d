# Fuzzing (libFuzzer + ASan + UBSan, clang only); see tests/fuzz/README.
#
#   make fuzz                      each target for FUZZ_SECONDS (60)
#   make fuzz FUZZ_SECONDS=300 -j2 two targets at a time
#   make fuzz-line                 one target (fuzz-event, ...)
#   make fuzz-build                build only, into $(BUILD)/fuzz/
#
# The project sources a target needs are compiled again here with clang and
# the fuzz flags, never taken from the gcc build. Each run starts from a fresh
# copy of the committed corpus in its own $(BUILD)/fuzz/work/<target>.XXXXXX/
# (log next to it, .log), so what it finds never grows tests/fuzz/corpus by
# itself and two runs in one tree never share a directory. A crash, a sanitizer report
# or a broken invariant (the targets abort()) fails the rule and prints the
# reproducer's path. Not part of `make test`.

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_FLAGS   ?=
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_SAN     := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
FUZZ_CFLAGS  := $(CSTD) -O1 -g $(FUZZ_SAN) -MMD -MP -Icommon -Iproducer/lib -Iproducer/ingress

# Every target: its harness is tests/fuzz/fuzz_<t>.c; its project sources,
# libraries and input size limit are below. command appears once
# producer/ingress/command.c exists.
FUZZ_ALL     := line event $(if $(wildcard producer/ingress/command.c),command)
FUZZ_TARGETS ?= $(FUZZ_ALL)

FUZZ_MAXLEN_line    := 70000
FUZZ_MAXLEN_event   := 8192
FUZZ_MAXLEN_command := 70000
FUZZ_LIBS_event     := -ljansson
FUZZ_LIBS_command   := -ljansson

$(FUZZ_DIR)/fuzz_line: $(FUZZ_DIR)/obj/producer/lib/line.o
$(FUZZ_DIR)/fuzz_event: $(FUZZ_DIR)/obj/common/event.o
$(FUZZ_DIR)/fuzz_command: $(FUZZ_DIR)/obj/producer/ingress/command.o $(FUZZ_DIR)/obj/producer/lib/line.o

.PHONY: fuzz fuzz-build
fuzz: $(FUZZ_TARGETS:%=fuzz-%)
fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

# Harnesses build with -Werror; project sources without it, so a warning
# only clang emits in someone else's file cannot block a fuzz run.
$(FUZZ_DIR)/obj/tests/fuzz/%.o: tests/fuzz/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARN) -c $< -o $@
$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(filter-out -Werror,$(WARN)) -c $< -o $@

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/tests/fuzz/fuzz_%.o
	$(FUZZ_CC) $(FUZZ_SAN) $^ $(FUZZ_LIBS_$*) -o $@

# One run: fresh working corpus, libFuzzer's output in <dir>.log, its final
# stats on success, the report's tail and the reproducer on failure.
fuzz-%: $(FUZZ_DIR)/fuzz_%
	@t=$*; art=$(FUZZ_DIR)/crashes/$$t/; mkdir -p $(FUZZ_DIR)/work $$art; \
	work=$$(mktemp -d $(FUZZ_DIR)/work/$$t.XXXXXX) || exit 1; log=$$work.log; \
	cp tests/fuzz/corpus/$$t/* $$work/ 2>/dev/null; \
	echo "fuzz $$t: $(FUZZ_SECONDS) s, working corpus $$work, log $$log"; \
	if $< -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAXLEN_$*) \
	      -timeout=$(FUZZ_TIMEOUT) -artifact_prefix=$$art -print_final_stats=1 \
	      $(FUZZ_FLAGS) $$work >$$log 2>&1; then \
	    grep -aE 'DONE|INITED|stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
	        $$log | sed "s/^/  $$t: /"; \
	else \
	    tail -n 40 $$log; \
	    repro=$$(LC_ALL=C sed -n 's/.*Test unit written to //p' $$log); \
	    echo "fuzz $$t: FAILED; reproducer: $${repro:-none, see $$log}"; \
	    echo "  rerun: $< $${repro:-<file>}"; \
	    exit 1; \
	fi

# (The objects built through the pattern chain are kept between runs: the
# Makefile's bare .SECONDARY: covers them. A .SECONDARY: with a list here
# would end that for every target, and make would delete the tools'
# objects after each build, relinking lapse-kafka-dev and the other tools
# at the next make while tests run them.)
