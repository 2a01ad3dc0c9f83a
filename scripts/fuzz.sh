#!/usr/bin/env bash
# `make fuzz`: run every cargo-fuzz target in fuzz/ for FUZZ_SECONDS (default 600) each.
# cargo-fuzz needs a nightly toolchain (sanitizer flags); it is installed with
# `cargo install cargo-fuzz --locked` when missing. Crashes land in fuzz/artifacts/<target>/;
# turn each into a regression test before fixing it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-600}"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
toolchain="${FUZZ_TOOLCHAIN:-nightly}"
if ! rustup toolchain list | grep -q "^${toolchain}"; then
  echo "make fuzz: no ${toolchain} toolchain (rustup toolchain install nightly)" >&2
  exit 2
fi
cd fuzz
for target in $(cargo "+${toolchain}" fuzz list); do
  echo "== fuzzing ${target} for ${seconds} s"
  mkdir -p "corpus/${target}"
  cargo "+${toolchain}" fuzz run "${target}" "corpus/${target}" -- \
    -max_total_time="${seconds}" -rss_limit_mb=2048 -max_len=1048576
done
