#!/usr/bin/env bash
# Proof that the differential suite catches the defects it claims to (docs/conformance.md,
# "Mutants"). Each tests/mutants/NN-name.patch is a deliberate defect of the server; for each
# selected one this applies it to a copy of the working tree, builds that copy's farm-apiserver,
# and runs the unchanged conformance test of this tree against it (FARM_APISERVER_BINARY). The
# run must fail and its output must contain what tests/mutants/mutants.txt says catches it.
#   MUTANTS="03 07"   only those (by number); MUTANTS=rotate: one, by day of the year (CI)
# The copy builds into this tree's target directory (${CARGO_TARGET_DIR:-target}), so the
# dependencies `make test` built are reused, with its binary renamed farm-apiserver-mutant: the
# copy's crates have other paths (so other artifacts), and the renamed binary is never written
# over target/debug/farm-apiserver, which this tree's tests run. The copy and the runs' logs are
# in ${CARGO_TARGET_DIR:-target}/mutants (tree/, logs/NN-name.log).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
manifest=tests/mutants/mutants.txt
test_name=every_request_is_answered_as_the_kube_apiserver_answers_it_for_a_crd

# The manifest: "NN-name.patch | what the failing run prints | the defect", # for comments.
mapfile -t entries < <(grep -v '^\s*\(#\|$\)' "$manifest")
field() { awk -F' [|] ' -v n="$2" '{ print $n }' <<<"$1"; }

# Cheap and always all of them: every patch still applies to this tree.
for entry in "${entries[@]}"; do
    patch=tests/mutants/$(field "$entry" 1)
    git apply --check "$patch" || { echo "mutant $patch no longer applies: remake it" >&2; exit 1; }
done
echo "all ${#entries[@]} mutants apply"

# The selection.
selected=()
case "${MUTANTS:-}" in
    "") selected=("${entries[@]}") ;;
    rotate)
        day=$((10#$(date -u +%j)))
        selected=("${entries[@]:$((day % ${#entries[@]})):1}")
        echo "day $day of the year: mutant $(field "${selected[0]}" 1) (MUTANTS=<number> picks another)" ;;
    *)
        for number in $MUTANTS; do
            match=$(printf '%s\n' "${entries[@]}" | grep "^$number-" || true)
            [ -n "$match" ] || { echo "no mutant numbered $number in $manifest" >&2; exit 1; }
            selected+=("$match")
        done ;;
esac

# This tree's conformance test, built once: the judge every mutant faces unchanged (asked again,
# built already, for the path of its binary).
# With --workspace, as `make test` builds it: the same features, so no build when it has run.
cargo test --locked --workspace --test conformance --no-run
judge=$(cargo test --locked --workspace --test conformance --no-run 2>&1 | sed -n 's/^ *Executable tests\/conformance.rs (\(.*\))$/\1/p')
[ -x "$judge" ] || { echo "no conformance test binary found" >&2; exit 1; }

# A copy of the tree (no target/, fuzz/target/ or .git/; written now, so cargo sees every file as new), at
# the same path every run, so that its crates' incremental builds are reused. Each mutant is
# taken out again after its run (git apply -R), which gives the files a new time too, so cargo
# rebuilds what the previous mutant changed.
export CARGO_TARGET_DIR
CARGO_TARGET_DIR=$(realpath -m "${CARGO_TARGET_DIR:-target}")
mutants_dir=$CARGO_TARGET_DIR/mutants
copy=$mutants_dir/tree
rm -rf "$copy" && mkdir -p "$copy"
# The copy is inside this tree when the target directory is: git would find this tree's
# repository above it and, run in a subdirectory, silently skip every path of a patch outside
# it (the mutant never applied). Its search stops at the copy.
export GIT_CEILING_DIRECTORIES=$mutants_dir
tar -c --exclude=./target --exclude=./fuzz/target --exclude=./.git . | tar -x -m -C "$copy"
sed -i '/^\[\[bin\]\]$/,/^path/ s/^name = "farm-apiserver"$/name = "farm-apiserver-mutant"/' "$copy/Cargo.toml"
grep -q '^name = "farm-apiserver-mutant"$' "$copy/Cargo.toml" || { echo "the copy's binary could not be renamed" >&2; exit 1; }

# What the run's report found, one a line: each unexplained difference as "[request label]
# how it differs", each entry out of bounds ("ENTRY ..."), kind of request not reached ("NOT
# REACHED ...") and the test's panic ("PANIC <its message>").
findings() {
    awk '/^DIFFERENT /{ label = $0; sub(/^DIFFERENT /, "", label); sub(/ (GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) [{\/].*$/, "", label)
                        getline; sub(/^ +/, ""); print label " " $0; next }
         /^(ENTRY|NOT REACHED) / { print }
         / panicked at / { getline; print "PANIC " $0 }' "$1"
}
survivors=0
table=()
for entry in "${selected[@]}"; do
    name=$(field "$entry" 1) expected=$(field "$entry" 2)
    echo "=== mutant $name: $(field "$entry" 3)"
    start=$SECONDS
    (cd "$copy" && git apply "$root/tests/mutants/$name") || { echo "mutant $name does not apply" >&2; exit 1; }
    # Applied for certain: each file it patches differs from this tree's.
    while read -r _ _ file; do
        ! cmp -s "$root/$file" "$copy/$file" || { echo "mutant $name left $file of the copy unchanged" >&2; exit 1; }
    done < <(git apply --numstat "$root/tests/mutants/$name")
    (cd "$copy" && cargo build --locked --workspace --bin farm-apiserver-mutant)
    log=$mutants_dir/logs/${name%.patch}.log && mkdir -p "${log%/*}"
    set +e
    FARM_APISERVER_BINARY=$CARGO_TARGET_DIR/debug/farm-apiserver-mutant "$judge" "$test_name" --nocapture >"$log" 2>&1
    status=$?
    set -e
    (cd "$copy" && git apply -R "$root/tests/mutants/$name")
    # What caught it: the first unexplained difference, else entry out of bounds, else kind of
    # request not reached; the manifest's text must be one of the findings.
    findings "$log" >"$log.findings"
    found=$log.findings
    caught=$( (grep -m1 -v '^\(ENTRY\|NOT REACHED\|PANIC\) ' "$found" || grep -m1 '^ENTRY ' "$found" || head -1 "$found") | cut -c1-200)
    # A known survivor (the manifest's "KNOWN SURVIVOR (why): <finding>") may survive; once
    # caught, its mark must go.
    known=${expected%%): *} finding=${expected#*): }
    [ "$known" != "$expected" ] && [[ $known == "KNOWN SURVIVOR ("* ]] || known="" finding=$expected
    if [ "$status" -eq 0 ] && [ -n "$known" ]; then
        verdict="survived, as known"
    elif [ "$status" -eq 0 ]; then
        verdict="SURVIVED"
    elif grep -qF -- "$finding" "$found"; then
        verdict=caught
        [ -z "$known" ] || verdict="caught: remove KNOWN SURVIVOR from $manifest"
    else
        verdict="caught by something else (expected: $finding)"
    fi
    case $verdict in caught | "survived, as known") ;; *) survivors=$((survivors + 1)) && tail -40 "$log" ;; esac
    table+=("$name | $verdict | ${caught:-?} | $((SECONDS - start)) s")
    echo "${table[-1]}"
done

echo "mutant | verdict | caught by | time (build and run)"
printf '%s\n' "${table[@]}"
[ "$survivors" -eq 0 ] || { echo "$survivors mutant(s) not caught as stated" >&2; exit 1; }
