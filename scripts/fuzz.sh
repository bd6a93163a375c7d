#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/, one after another (one process at a
# time: -jobs=1), each for SECONDS, and prints how many inputs each ran.
#   scripts/fuzz.sh SECONDS [TARGET...]      (all targets when none is named)
# New inputs go to fuzz/target/corpus/TARGET (not committed); the committed
# seeds in fuzz/corpus/TARGET are read, never written. A crash stops the run
# with its input saved in fuzz/artifacts/TARGET/ (replay it with
# `cargo fuzz run TARGET fuzz/artifacts/TARGET/crash-...`, see fuzz/README.md).
# A tally of every run is appended to fuzz/target/campaign.tsv.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(rules plan hooks api_request acp_inbound)

if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

# cargo fuzz passes unstable flags to rustc (sanitizer coverage); the one
# stable toolchain accepts them with RUSTC_BOOTSTRAP. No sanitizer: the code
# under test has no unsafe of its own, and debug assertions (-a) catch
# overflows.
export RUSTC_BOOTSTRAP=1
flags=(--sanitizer none --debug-assertions --release)
cargo fuzz build "${flags[@]}"

mkdir -p target/corpus
summary=()
for t in "${targets[@]}"; do
  mkdir -p "target/corpus/$t" "corpus/$t" "artifacts/$t"
  log="target/fuzz-$t.log"
  echo "fuzz: $t for ${seconds}s"
  start=$(date +%s)
  before=$(find "artifacts/$t" -type f | wc -l)
  status=0
  cargo fuzz run "${flags[@]}" "$t" "target/corpus/$t" "corpus/$t" -- \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || status=$?
  took=$(($(date +%s) - start))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  runs=${runs:-?}
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  took=${secs:-$took}
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$took" "$runs" "$status" >>target/campaign.tsv
  summary+=("$(printf '%-12s %6ss %12s inputs' "$t" "$took" "$runs")")
  if [ "$status" -ne 0 ]; then
    tail -40 "$log" >&2
    # A failing input is a new file in artifacts/; anything else (the target
    # did not build, libFuzzer refused its options) left none.
    if [ "$(find "artifacts/$t" -type f | wc -l)" -gt "$before" ]; then
      newest=$(ls -t "artifacts/$t" | head -1)
      echo "fuzz: $t FOUND A FAILING INPUT (exit $status): fuzz/artifacts/$t/$newest; the log is fuzz/$log" >&2
    else
      echo "fuzz: $t did not run to its end (exit $status) and saved no input: see fuzz/$log (a build error?)" >&2
    fi
    exit 1
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
