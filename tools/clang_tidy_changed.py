#!/usr/bin/env python3
"""The translation units clang-tidy must look at again since a clean run.

Usage: tools/clang_tidy_changed.py BUILD_DIR BASE_FILE AREAS_REGEX
Prints a regular expression for run-clang-tidy matching every source file
of BUILD_DIR's compile database under AREAS_REGEX (matched against the path
relative to the repository) that changed since the commit in BASE_FILE,
or whose header dependencies (ninja -t deps of that build) include a file
that changed; "ALL" when BASE_FILE's commit is unknown here (a shallow
clone), when .clang-tidy differs from the one of the clean run, or when the
global flags' files changed (CMakeLists.txt, CMakePresets.json, cmake/); an
empty line when nothing needs a look.

BASE_FILE (tools/clang_tidy.base) holds the commit a full run started from
and found nothing unfixed at, and the sha256 of the .clang-tidy it used.
"""
import hashlib
import json
import os
import re
import subprocess
import sys


def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True, check=False)


def main():
    build, base_file = os.path.abspath(sys.argv[1]), sys.argv[2]
    areas = re.compile(sys.argv[3])
    root = git("rev-parse", "--show-toplevel").stdout.strip()
    fields = {}
    for line in open(base_file, encoding="utf-8"):
        if line.strip() and not line.startswith("#"):
            key, value = line.split(None, 1)
            fields[key] = value.strip()
    commit, config_sha = fields["commit"], fields["clang-tidy-sha256"]
    with open(os.path.join(root, ".clang-tidy"), "rb") as f:
        if hashlib.sha256(f.read()).hexdigest() != config_sha:
            print("ALL")
            return
    diff = git("diff", "--name-only", commit)  # against the working tree
    if diff.returncode != 0:
        print("ALL")
        return
    changed = set(diff.stdout.split())
    changed |= set(git("ls-files", "--others", "--exclude-standard").stdout.split())
    # The global flags (an area's CMakeLists.txt adds sources, which are
    # changed files themselves; a flag changed there alone is not seen).
    if changed & {"CMakeLists.txt", "CMakePresets.json"} or any(p.startswith("cmake/")
                                                                for p in changed):
        print("ALL")
        return
    changed_abs = {os.path.join(root, p) for p in changed}
    deps = {}  # object -> header paths (absolute)
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True,
                         check=False).stdout
    current = None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            current = line.split(":")[0]
            deps[current] = []
        elif line.strip() and current is not None:
            deps[current].append(os.path.normpath(os.path.join(build, line.strip())))
    selected = []
    for entry in json.load(open(os.path.join(build, "compile_commands.json"), encoding="utf-8")):
        source = os.path.normpath(entry["file"])
        if not areas.match(os.path.relpath(source, root)):
            continue
        obj = re.search(r"-o (\S+)", entry["command"])
        headers = deps.get(obj.group(1)) if obj else None
        if source in changed_abs or headers is None or changed_abs.intersection(headers):
            selected.append(source)
    print("|".join("^" + re.escape(s) + "$" for s in sorted(selected)))


if __name__ == "__main__":
    main()
