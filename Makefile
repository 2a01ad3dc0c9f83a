# lspc developer targets. Local tool installs go to .tools/ (gitignored).
# Recipes use bash so `set -o pipefail` and PATH juggling behave the same everywhere.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
LSPC ?= target/release/lspc
TOOLS := $(CURDIR)/.tools
PYRIGHT_PREFIX := $(TOOLS)/pyright

.PHONY: build demo test test-all lint bench fuzz compile-commands

build:
	$(CARGO) build --release

# Runs `lspc check` on the Python fixture workspace with a real pyright. pyright comes from PATH,
# or is installed once into .tools/pyright. Exit status 1 ("found errors") is the expected outcome
# for this workspace; any other non-zero status fails the target.
demo: build
	@if ! command -v pyright-langserver >/dev/null 2>&1 \
	    && [ ! -x "$(PYRIGHT_PREFIX)/node_modules/.bin/pyright-langserver" ]; then \
	  echo "pyright-langserver not on PATH: installing pyright into $(PYRIGHT_PREFIX)"; \
	  npm install --silent --no-audit --no-fund --prefix "$(PYRIGHT_PREFIX)" pyright; \
	fi
	@export PATH="$$PATH:$(PYRIGHT_PREFIX)/node_modules/.bin"; \
	status=0; \
	$(LSPC) check --root fixtures/workspaces/python fixtures/workspaces/python || status=$$?; \
	if [ "$$status" -eq 1 ]; then \
	  echo "lspc exited with status 1: it found errors (expected for this workspace)"; \
	elif [ "$$status" -ne 0 ]; then \
	  echo "lspc exited with status $$status" >&2; exit "$$status"; \
	fi

# `cargo test` builds both binaries (lspc and lspc-fixture-server) before running the tests, which
# the integration tests spawn. The C fixture's compile_commands.json is generated first because it
# needs absolute paths.
test: compile-commands
	$(CARGO) test

# Installs every language server the tests use (apt, npm, PyPI), then lints and tests: what CI runs.
test-all:
	bash .ci/run

compile-commands:
	@fixtures/scripts/gen-compile-commands.sh >/dev/null

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

# Issue 7's benchmark (not part of CI): builds the release binaries, installs the peers it compares
# against into target/bench/tools (cached; mcpls is a cargo install of a few minutes), prints the
# table and writes target/bench/results.json. Method and latest table: fixtures/bench/README.md.
bench:
	$(CARGO) build --release --bins
	target/release/lspc-bench $(BENCH_ARGS)

fuzz:
	fixtures/scripts/fuzz.sh
