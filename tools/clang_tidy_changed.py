#!/usr/bin/env python3
"""The translation units clang-tidy must look at again since a clean run.

Usage: tools/clang_tidy_changed.py BUILD_DIR BASE_FILE AREAS_REGEX
       tools/clang_tidy_changed.py --database BUILD_DIR OUT_DIR
Prints a regular expression for run-clang-tidy matching every source file
of BUILD_DIR's compile database under AREAS_REGEX (matched against the path
relative to the repository) that changed since the commit in BASE_FILE,
or whose header dependencies (ninja -t deps of that build) include a file
that changed; "ALL" when BASE_FILE's commit is unknown here (a shallow
clone), when .clang-tidy differs from the one of the clean run, or when the
flags clang-tidy sees differ from the clean run's; an empty line when
nothing needs a look.

The unity builds' entries (cli/ and the tests: one translation unit per
batch of files) stand for the files they include: --database writes
OUT_DIR/compile_commands.json with each such entry replaced by one per
file, for run-clang-tidy, and the selection treats them the same way (each
file with the headers of its unity object).

BASE_FILE (tools/clang_tidy.base) holds the commit a full run started from
and found nothing unfixed at, the sha256 of the .clang-tidy it used, and
the sha256 of its compile database's flags (`--flags-sha256 BUILD_DIR AREAS`
prints it): every distinct flag list of the files under AREAS, without the
optimisation level and debug-info flags (they do not change what clang-tidy
reads) and with the source and build folders written as placeholders.
"""
import hashlib
import json
import os
import re
import subprocess
import sys


def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True, check=False)


DROPPED = re.compile(r"-O[0-3sgz]?|-g\S*")


UNITY_INCLUDE = re.compile(r'^#include "(.+)"$', re.M)


def database(build):
    """BUILD's compile database, a unity entry replaced by its files."""
    entries = []
    for entry in json.load(open(os.path.join(build, "compile_commands.json"), encoding="utf-8")):
        unity = os.path.join(entry["directory"], entry["file"])
        if "/Unity/unity_" not in unity:
            entries.append(entry)
            continue
        with open(unity, encoding="utf-8") as f:
            for source in UNITY_INCLUDE.findall(f.read()):
                entries.append(dict(entry, file=source,
                                    command=entry["command"].replace(entry["file"], source)))
    return entries


def area_entries(build, root, areas):
    """database(BUILD)'s entries for the files under AREAS."""
    return [e for e in database(build)
            if areas.match(os.path.relpath(os.path.normpath(e["file"]), root))]


def flags_sha256(entries, build, root):
    """The digest of the flags clang-tidy sees in ENTRIES (see the docstring)."""
    lists = set()
    for entry in entries:
        words = entry["command"].split()
        kept = []
        skip = False
        for word in words[1:]:  # the compiler's path is not a flag
            if skip:
                skip = False
            elif word in ("-o", "-c"):
                skip = True
            elif not DROPPED.fullmatch(word):
                kept.append(word.replace(build, "@BUILD@").replace(root, "@SOURCE@"))
        lists.add(" ".join(kept))
    return hashlib.sha256("\n".join(sorted(lists)).encode()).hexdigest()


def main():
    if sys.argv[1] == "--database":
        os.makedirs(sys.argv[3], exist_ok=True)
        with open(os.path.join(sys.argv[3], "compile_commands.json"), "w", encoding="utf-8") as f:
            json.dump(database(os.path.abspath(sys.argv[2])), f, indent=1)
        return
    if sys.argv[1] == "--flags-sha256":
        build = os.path.abspath(sys.argv[2])
        root = git("rev-parse", "--show-toplevel").stdout.strip()
        print(flags_sha256(area_entries(build, root, re.compile(sys.argv[3])), build, root))
        return
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
    entries = area_entries(build, root, areas)
    if flags_sha256(entries, build, root) != fields["flags-sha256"]:
        print("ALL")
        return
    diff = git("diff", "--name-only", commit)  # against the working tree
    if diff.returncode != 0:
        print("ALL")
        return
    changed = set(diff.stdout.split())
    changed |= set(git("ls-files", "--others", "--exclude-standard").stdout.split())
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
    for entry in entries:
        source = os.path.normpath(entry["file"])
        obj = re.search(r"-o (\S+)", entry["command"])
        headers = deps.get(obj.group(1)) if obj else None
        if source in changed_abs or headers is None or changed_abs.intersection(headers):
            selected.append(source)
    print("|".join("^" + re.escape(s) + "$" for s in sorted(selected)))


if __name__ == "__main__":
    main()
