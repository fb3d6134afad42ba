#!/usr/bin/env python3
"""Counts each library's public items from rustdoc's JSON, and the items reachable by more than
one path (a module path and a re-export, say).

    tools/public-items.py [CRATE ...]

Needs a nightly toolchain (`cargo +nightly rustdoc ... --output-format json`); writes into
target/doc-json. Prints one line per crate: items, paths, items with more than one path.
"""
import json
import os
import subprocess
import sys

CRATES = ["gpu-partition-types", "gpu-host-probe", "layout-model", "host-sync", "warm-reset", "mig-layout"]
KINDS_SKIPPED = {"impl", "use", "module"}


def load(crate, target):
    subprocess.run(
        ["cargo", "+nightly", "rustdoc", "-q", "-p", crate, "--lib", "--all-features",
         "--target-dir", target, "--", "-Z", "unstable-options", "--output-format", "json"],
        check=True)
    with open(os.path.join(target, "doc", crate.replace("-", "_") + ".json")) as f:
        return json.load(f)


def kind(item):
    inner = item.get("inner", {})
    return next(iter(inner)) if isinstance(inner, dict) and inner else str(inner)


def walk(doc):
    """Every public path to each item of this crate: {item id: {path, ...}}."""
    index = doc["index"]
    paths = {}

    def visit(module_id, prefix, seen):
        if module_id in seen:
            return
        seen = seen | {module_id}
        module = index.get(str(module_id)) or index.get(module_id)
        for child in module["inner"]["module"]["items"]:
            item = index.get(str(child)) or index.get(child)
            if item is None or item.get("visibility") != "public":
                continue
            k = kind(item)
            if k == "use":
                use = item["inner"]["use"]
                target = use.get("id")
                target_item = index.get(str(target)) if target is not None else None
                if target_item is None:
                    continue  # another crate's item
                if use.get("is_glob"):
                    if kind(target_item) == "module":
                        visit(target, prefix, seen)
                    continue
                name = use["name"]
                if kind(target_item) == "module":
                    visit(target, prefix + [name], seen)
                else:
                    paths.setdefault(target, set()).add("::".join(prefix + [name]))
                continue
            name = item.get("name")
            if k == "module":
                visit(child, prefix + [name], seen)
            elif k not in KINDS_SKIPPED and name:
                paths.setdefault(child, set()).add("::".join(prefix + [name]))

    visit(doc["root"], [index[str(doc["root"])]["name"]], frozenset())
    return paths


def main():
    crates = sys.argv[1:] or CRATES
    target = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "doc-json")
    print(f"{'crate':22} {'items':>6} {'paths':>6} {'items with 2+ paths':>20}")
    for crate in crates:
        paths = walk(load(crate, target))
        many = sum(1 for p in paths.values() if len(p) > 1)
        total = sum(len(p) for p in paths.values())
        print(f"{crate:22} {len(paths):6} {total:6} {many:20}")


if __name__ == "__main__":
    main()
