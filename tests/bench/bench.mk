# make bench: see tests/bench/run
.PHONY: bench
