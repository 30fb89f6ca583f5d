# make fuzz: see tests/fuzz/README (filled in by the fuzz work)
.PHONY: fuzz
