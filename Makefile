# The two commands of the README. Each one sets up what it needs and is safe to run again.
#   make run    open the workbench on the demo workspace
#   make test   run the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test bench screenshots package clean

$(STAMP): pyproject.toml constraints.txt Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "pip==26.3"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[test,ascend,fast]"
	$(BIN)/python -c "from studio.tools.accuracy import fused, msprobe_fused; fused.warm_up(); msprobe_fused.warm_up()"  # compile numba's cache once
	$(BIN)/python -c "from studio.tools.profiler import chrome_scan; chrome_scan.warm_up()"  # before the test workers race to compile it
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/studio --demo

# The tests run in TEST_JOBS worker processes (pytest-xdist; `make test TEST_JOBS=0` runs them in one).
# The corpus's cases stay on one worker (they share its fetched models): --dist loadgroup.
TEST_JOBS ?= 2
test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadgroup

bench: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python benchmarks/run.py $(BENCH)

screenshots: $(STAMP)
	$(BIN)/studio screenshot -o screenshots --demo

package: $(STAMP)
	packaging/build.sh

clean:
	rm -rf $(VENV) build dist screenshots .pytest_cache
