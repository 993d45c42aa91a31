#!/usr/bin/env bash
# Fuzzes farm-apiserver's parsers and decoders with cargo-fuzz (libFuzzer): every target of
# fuzz/Cargo.toml (label and field selectors, Llama body decoding, YAML bodies, merge and JSON patches, the
# continue token, deep JSON, the conversion between Llama versions, server-side apply's typed merge) runs for
# FUZZ_SECONDS seconds each (default 15), from the seeds in
# fuzz/corpus/<target>/, and the script fails if any target crashes, naming the input it saved.
#
#   FUZZ_SECONDS=60 bash scripts/fuzz.sh                  # every target, a minute each
#   FUZZ_TARGETS="json_patch merge_patch" bash scripts/fuzz.sh
#   RUSTC_BOOTSTRAP=1 cargo fuzz run json_patch fuzz/artifacts/json_patch/crash-...   # replay one
#   FUZZ_BUILD_ONLY=1 bash scripts/fuzz.sh                # only the build (CI starts it beside `make test`)
#
# Builds go to fuzz/target (FUZZ_TARGET_DIR to move them). A cold build is long: every dependency
# is instrumented (about 16 minutes on 2 cores with cargo-fuzz's one codegen unit; see
# FUZZ_CODEGEN_UNITS below). What libFuzzer adds to the corpus
# goes to <target dir>/corpus/<target>/, kept between local runs, so the tracked seeds stay as they
# are and a run leaves the git tree clean; crash inputs go to fuzz/artifacts/<target>/ (ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${FUZZ_SECONDS:-15}
target_dir=${FUZZ_TARGET_DIR:-$root/fuzz/target}

# cargo-fuzz passes a nightly-only flag to rustc (-Zsanitizer=address). The only toolchain here is
# stable, which accepts it with RUSTC_BOOTSTRAP=1; the AddressSanitizer runtime ships with stable's
# rust-std, so the default sanitizer works and `--sanitizer none` is not needed.
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# fuzz/ is a workspace of its own with an untracked Cargo.lock: start it from the main crate's, so
# the library is fuzzed with the dependency versions it ships with (cargo adds libfuzzer-sys).
if [[ ! -f fuzz/Cargo.lock || Cargo.lock -nt fuzz/Cargo.lock ]]; then
    cp Cargo.lock fuzz/Cargo.lock
fi

if [[ -n "${FUZZ_TARGETS:-}" ]]; then
    read -r -a targets <<<"$FUZZ_TARGETS"
else
    mapfile -t targets < <(cargo fuzz list)
fi

# One build of every target (optimized, with debug assertions and overflow checks: cargo-fuzz's
# default, which `-O` would turn off); `cargo fuzz run` below, given the same options, then finds
# it up to date. 16 codegen units instead of cargo-fuzz's 1 for optimized builds (its help: "16
# may be a good choice if you want faster fuzz builds at the cost of somewhat slower fuzz runs"):
# with one, the largest crates (kube-client, apiserver-kit, farm-apiserver) compile on one core.
build_options=(--target-dir "$target_dir" --codegen-units "${FUZZ_CODEGEN_UNITS:-16}")
cargo fuzz build "${build_options[@]}"
if [[ -n "${FUZZ_BUILD_ONLY:-}" ]]; then
    echo "fuzz: ${#targets[@]} targets built"
    exit 0
fi

mkdir -p "$target_dir/logs"
failed=()
for target in "${targets[@]}"; do
    corpus="$target_dir/corpus/$target"
    log="$target_dir/logs/$target.log"
    mkdir -p "$corpus"
    args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1)
    if [[ -f "fuzz/dicts/$target.dict" ]]; then
        args+=(-dict="fuzz/dicts/$target.dict")
    fi
    echo "fuzz: $target for ${seconds}s (log: $log)"
    # libFuzzer writes new inputs to the first corpus directory and only reads the others.
    if cargo fuzz run "${build_options[@]}" "$target" "$corpus" "fuzz/corpus/$target" -- "${args[@]}" >"$log" 2>&1; then
        grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 | sed "s/^/fuzz: $target: /"
    else
        failed+=("$target")
        echo "fuzz: $target FAILED; the end of its log:"
        tail -n 60 "$log"
        artifact=$(grep -o 'Test unit written to .*' "$log" | tail -n 1 | sed 's/^Test unit written to //' || true)
        echo "fuzz: $target: input saved as ${artifact:-<none; see $log>}"
    fi
done

if ((${#failed[@]})); then
    echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}"
    exit 1
fi
echo "fuzz: ${#targets[@]} targets ran ${seconds}s each without a crash"
