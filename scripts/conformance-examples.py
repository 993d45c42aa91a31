#!/usr/bin/env python3
"""Keeps crates/conformance/src/examples.jsonl, the examples the unit test `proofs.rs` holds each
allowed difference to, in step with the tables of crates/conformance/src/allowed.rs.

The examples come from the last runs of the differential suites (`make test`, `make conformance`),
which write every allowed difference with both answers to
target/tmp/conformance-<plural>-allowed.jsonl. For an entry, the smallest example that it alone
explains is taken (else the smallest of those it explains with others).

    python3 scripts/conformance-examples.py                  # add the missing, drop the stale
    python3 scripts/conformance-examples.py 'DELETE:' 'null' # also take new ones for the entries
                                                             # whose names start with these

It prints what it did; the examples of entries that no run showed are kept as they are.
"""

import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "crates/conformance/src/examples.jsonl")
TABLES = os.path.join(ROOT, "crates/conformance/src/allowed.rs")
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
SUBJECTS = ["llamas", "regions"]


def entry_names():
    """The names of the entries of ON_PURPOSE and TO_FIX, in the tables' order."""
    source = open(TABLES, encoding="utf-8").read()
    literals = re.findall(r'^\s+name: "((?:[^"\\]|\\.)*)",$', source, re.MULTILINE)
    return [json.loads(f'"{literal}"') for literal in literals]


def seen_in_runs():
    """The smallest example of each entry in the runs' allowed differences."""
    best = {}
    for subject in SUBJECTS:
        path = os.path.join(TARGET, "tmp", f"conformance-{subject}-allowed.jsonl")
        if not os.path.exists(path):
            continue
        for line in open(path, encoding="utf-8").read().splitlines():
            seen = json.loads(line)
            answers = {key: seen[key] for key in ("request", "ours", "reference")}
            example = {"entries": seen["entries"], "subject": subject, **answers}
            rank = (len(seen["entries"]), len(line))
            for name in seen["entries"]:
                if name not in best or rank < best[name][0]:
                    best[name] = (rank, example)
    return {name: example for name, (_, example) in best.items()}


def main(refresh):
    names = entry_names()
    kept = {}
    for line in open(EXAMPLES, encoding="utf-8").read().splitlines():
        example = json.loads(line)
        for name in example["entries"]:
            if name not in kept or len(example["entries"]) < len(kept[name]["entries"]):
                kept[name] = example
    seen = seen_in_runs()
    out, wrote = [], set()
    for name in names:
        fresh = any(name.startswith(prefix) for prefix in refresh) or name not in kept
        example = seen.get(name) if fresh else None
        if example is None:
            example = kept.get(name)
            if example is None:
                print(f"no example (run the suites that show it): {name}")
                continue
        elif name in kept:
            print(f"new example: {name}")
        else:
            print(f"added: {name}")
        example = {**example, "entries": [n for n in example["entries"] if n in names]}
        text = json.dumps(example, separators=(",", ":"))
        if text not in wrote:
            wrote.add(text)
            out.append(text)
    for name in sorted(set(kept) - set(names)):
        print(f"dropped (no such entry): {name}")
    open(EXAMPLES, "w", encoding="utf-8").write("\n".join(out) + "\n")
    print(f"{len(out)} examples, {sum(map(len, out))} bytes: {os.path.relpath(EXAMPLES, ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
