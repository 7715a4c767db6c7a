# The README's commands. `make run` sets up everything and runs `headroom check`
# on this host; `make test` sets up everything and runs every test suite.
.PHONY: deps build run test unit integration pytest promtool asan bench format clean

JOBS ?= $(shell nproc)
BUILD := build/dev
HEADROOM := $(BUILD)/src/cli/headroom
PYTHON := /usr/bin/python3

deps:
	scripts/install-deps

build: deps
	cmake --preset dev >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(HEADROOM) check

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L unit

integration: build
	HEADROOM_BIN=$(abspath $(HEADROOM)) $(PYTHON) -m pytest -q tests/integration

pytest: build
	PYTHONPATH=$(abspath python) HEADROOM_BIN=$(abspath $(HEADROOM)) $(PYTHON) -m pytest -q tests/python

promtool: deps
	tests/promtool/run

asan: deps
	cmake --preset asan >/dev/null
	cmake --build build/asan -j $(JOBS) --target headroom_tests headroom
	ctest --test-dir build/asan --output-on-failure -j $(JOBS) -L unit

test: build
	scripts/test-all

bench: deps
	bench/run

format:
	clang-format -i $$(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h')

clean:
	rm -rf build
