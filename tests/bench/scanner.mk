# make bench-scanner: scanner lateness/throughput and split benchmarks (tests/bench/scanner-run)
.PHONY: bench-scanner
