# The README's commands. `make run` sets up everything and runs `headroom check`
# on this host; `make test` sets up everything and runs every test suite.
.PHONY: deps build build-cli run deb test-deb test-image install test unit integration pytest promtool test-slurm asan asan-build bench format format-check tidy clean

JOBS ?= $(shell nproc)
BUILD := build/dev
HEADROOM := $(BUILD)/src/cli/headroom
PYTHON := /usr/bin/python3

deps:
	scripts/install-deps

build: deps
	cmake --preset dev >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	@# As root, `import headroom` works from Debian's python3 without PYTHONPATH: a .pth
	@# file in its site dir names this repo's python/ dir (docs/python.md; delete it to undo).
	@if [ "$$(id -u)" = 0 ]; then \
	  site=$$($(PYTHON) -c 'import site; print(site.getsitepackages()[0])') && \
	  mkdir -p "$$site" && echo "$(abspath python)" > "$$site/headroom.pth"; fi

# What `headroom check` needs and no more: the CLI alone, not the tests, the Python
# module nor headroom-watch's lean copy of the core (README: minutes on 2 cores).
build-cli: deps
	cmake --preset dev >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target headroom

run: build-cli
	$(HEADROOM) check

# The Debian package, dist/headroom_<version>_<arch>.deb (docs/packaging.md): a
# Release build without tests (the `deb` preset, build/deb), man pages and
# completions generated from the CLI's --help, and CPack. ccache when installed.
DEB_BUILD := build/deb
deb:
	scripts/install-deps deb
	cmake --preset deb $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) >/dev/null
	cmake --build $(DEB_BUILD) -j $(JOBS)
	rm -f dist/headroom_*.deb
	cd $(DEB_BUILD) && cpack -G DEB >/dev/null
	@ls dist/headroom_*.deb

# Installs the package into a bare Debian 12 root (debootstrap, cached in
# build/deb-root) and runs it there; lintian's tags against docs/packaging.md.
test-deb: deb
	scripts/install-deps test-deb
	tests/deb/run

# deploy/container/Containerfile built with podman from that package, and its
# entrypoint run (docs/kubernetes.md).
test-image: deb
	scripts/install-deps test-image
	tests/deb/image

# headroom and headroom-watch (the watch daemon alone, which `headroom watch`
# runs) into $(PREFIX)/bin, where deploy/systemd expects them.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L unit

# pytest's own scratch dirs live in the build tree, not in the host's /tmp.
PYTEST := $(PYTHON) -m pytest -q --basetemp=$(abspath build/pytest-tmp)

integration: build
	HEADROOM_BIN=$(abspath $(HEADROOM)) $(PYTEST) tests/integration

pytest: build
	PYTHONPATH=$(abspath python) HEADROOM_BIN=$(abspath $(HEADROOM)) $(PYTEST) tests/python

promtool: deps
	tests/promtool/run

# deploy/slurm's prolog, epilog, task prolog and health check in a real one-node Slurm
# (Debian's slurmctld, slurmd and munge, installed by the script) in private namespaces;
# root only. docs/slurm.md.
test-slurm: build
	tests/slurm/run $(abspath $(HEADROOM))

# The unit tests under ASan+UBSan: only their binary is built (the CLI is not
# run here; the dev build's integration tests run it).
asan-build: deps
	cmake --preset asan >/dev/null
	cmake --build build/asan -j $(JOBS) --target headroom_tests

# One process for all of them: under ASan each test's process start costs ~0.3 s,
# so ctest's process per test took 111 s where this takes 30 s.
asan: asan-build
	build/asan/tests/headroom_tests --gtest_brief=1

test: build
	scripts/test-all

bench: deps
	bench/all

# The C++ sources clang-format (.clang-format) owns; format-check is CI's first step,
# with the core's layering (src/core/LAYERS: folders include only lower layers).
FORMAT_FILES = $$(git ls-files '*.cc' '*.h')
format:
	clang-format -i $(FORMAT_FILES)

format-check: deps
	clang-format --dry-run --Werror $(FORMAT_FILES)
	scripts/check-layers

# clang-tidy over src/ (.clang-tidy); ~8 minutes on 2 cores, so not part of `make test`.
tidy: build
	scripts/tidy

clean:
	rm -rf build
