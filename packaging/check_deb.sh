#!/usr/bin/env bash
# Builds the Debian package of a configured and built build directory
# (cpack -G DEB), unpacks it into a scratch root with `dpkg -x` (no root
# needed, nothing installed on the machine), and checks what a user gets:
# its control fields, `fplab diff` (drift caught, identical files pass),
# the CI recipes' `fplab-ci.sh` and
# `import fplab` from the unpacked tree, not from the build tree; in the
# full package, the bundled model read from usr/share/fplab.
# KIND is the build's (cmake/Distribution.cmake):
#   full  the release build's package `fplab`: `import fplab.torch` works,
#         and a small model under fplab.torch.orders("split-k(8)") gives
#         bits unlike PyTorch's own (the negative control) and equal to the
#         same call in the build tree's module;
#   lite  the lite build's `fplab-lite`: no MPI, and fplab.torch says in one
#         line that it is not there.
#   packaging/check_deb.sh BUILD_DIR [PYTHON] [KIND]
set -euo pipefail
build=$(cd "$1" && pwd)
python=${2:-/usr/bin/python3}
kind=${3:-lite}
case $kind in
  full) package=fplab ;;
  lite) package=fplab-lite ;;
  *) echo "check_deb: KIND must be full or lite, not '$kind'" >&2; exit 2 ;;
esac
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fplab-deb.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

fail() { echo "check_deb: FAIL: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$scratch/out" >"$scratch/cpack.log" 2>&1) ||
  { cat "$scratch/cpack.log" >&2; fail "cpack -G DEB"; }
deb=$(ls "$scratch"/out/"${package}"_*.deb)
echo "check_deb: built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

fields=$(dpkg-deb -f "$deb" Package Depends Recommends Conflicts)
echo "$fields"
grep -q "^Package: $package\$" <<<"$fields" || fail "package name"
grep -q 'python3-numpy' <<<"$fields" || fail "Depends lacks python3-numpy"
# dpkg-shlibdeps ran: the C++ runtime is a dependency.
grep -q 'libstdc++6' <<<"$fields" || fail "Depends lacks libstdc++6 (dpkg-shlibdeps)"
if [ "$kind" = lite ]; then
  if grep -qi 'mpi' <<<"$fields"; then fail "a lite package depends on MPI"; fi
  grep -q '^Conflicts: fplab$' <<<"$fields" || fail "fplab-lite does not conflict with fplab"
else
  # The lab's libraries, found by dpkg-shlibdeps in the program and the module.
  grep -q 'libopenmpi3' <<<"$fields" || fail "Depends lacks libopenmpi3 (the program links Open MPI)"
  grep -q 'libopenblas' <<<"$fields" || fail "Depends lacks OpenBLAS (the model's blas order)"
  grep -q '^Recommends: python3-torch$' <<<"$fields" || fail "python3-torch is not Recommended"
  grep -q '^Conflicts: fplab-lite$' <<<"$fields" || fail "fplab does not conflict with fplab-lite"
fi

root="$scratch/root"
dpkg -x "$deb" "$root"
fplab="$root/usr/bin/fplab"
[ -x "$fplab" ] || fail "no usr/bin/fplab in the package"
# The script the CI recipes call by name (FPLAB_CI: fplab-ci.sh, on PATH).
ci="$root/usr/bin/fplab-ci.sh"
[ -x "$ci" ] || fail "no usr/bin/fplab-ci.sh in the package (the CI recipes call it)"
set +e
out=$("$ci" --help 2>&1); rc=$?
set -e
grep -q 'fplab-ci.sh check' <<<"$out" || { echo "$out"; fail "usr/bin/fplab-ci.sh --help (exit $rc)"; }
site="$root/usr/lib/python3/dist-packages"
[ -f "$site/fplab/__init__.py" ] || fail "no fplab package under usr/lib/python3/dist-packages"

# fplab diff from the unpacked tree: drift is exit 1 and names the element;
# the same file is exit 0 (the negative control).
printf 'x\n0.5\n0.25\n' >"$scratch/a.csv"
printf 'x\n0.5\n0x1.0000000000001p-2\n' >"$scratch/b.csv"
set +e
out=$("$fplab" diff "$scratch/a.csv" "$scratch/b.csv" 2>&1); rc=$?
set -e
[ "$rc" = 1 ] || { echo "$out"; fail "fplab diff on drifted files exited $rc, not 1"; }
grep -q 'x\[1\]: 0.25' <<<"$out" || { echo "$out"; fail "the drifted element is not listed"; }
"$fplab" diff "$scratch/a.csv" "$scratch/a.csv" >/dev/null || fail "identical files did not pass"

# import fplab from the unpacked tree only (-I: no user site, no PYTHONPATH
# from the environment; the build tree is not on the path).
cd "$scratch"
PYTHONPATH='' "$python" -I -c "
import sys
sys.path.insert(0, '$site')
import numpy as np, fplab
assert fplab.__file__.startswith('$site'), fplab.__file__
x = np.array([1e20, 0.1, -1e20])
assert fplab.exact_sum(x) == 0.1 and fplab.sum(x, 'sequential') == 0.0
r = fplab.diff(np.array([0.25]), np.array([np.nextafter(0.25, 1)]))
assert not r.passed and r.drifted[0].index == (0,) and r.drifted[0].ulps == 1
print('check_deb: import fplab from', fplab.__file__)
# A dtype it cannot order: one line.
try:
    fplab.sum(np.ones(3, dtype=np.complex64), 'sequential')
    raise SystemExit('check_deb: fplab.sum ordered a complex array')
except TypeError as e:
    assert str(e).startswith('fplab.sum: dtype') and '\\n' not in str(e), str(e)
    print('check_deb: a complex array:', e)
"
if [ "$kind" = lite ]; then
  # The lite package has no model library: fplab.torch says so in one line.
  PYTHONPATH='' "$python" -I -c "
import sys
sys.path.insert(0, '$site')
try:
    import fplab.torch
    raise SystemExit('check_deb: fplab.torch imported from a lite package')
except ImportError as e:
    assert str(e).startswith('fplab.torch:') and '\\n' not in str(e), str(e)
    print('check_deb: import fplab.torch:', e)
"
  echo "check_deb: PASS"
  exit 0
fi

# The full package's program finds its data in the package, not in the
# checkout it was built from: `fplab generate` on the bundled model works,
# and with the packaged model damaged it fails naming the packaged file
# (the control that the checkout's copy was not read).
model="$root/usr/share/fplab/model/data/kjv-char.safetensors"
[ -f "$model" ] || fail "no usr/share/fplab/model/data/kjv-char.safetensors in the package"
[ -f "$root/usr/share/fplab/experiments/data/a4_normals.npy" ] || fail "no experiments' fixture in the package"
out=$(FPLAB_MODEL='' "$fplab" generate -n 4 'In the ' 2>&1) ||
  { echo "$out"; fail "fplab generate on the packaged bundled model"; }
echo "check_deb: fplab generate from the package: $out"
cp "$model" "$scratch/model.keep"
head -c 16 "$scratch/model.keep" >"$model"
set +e
out=$(FPLAB_MODEL='' "$fplab" generate -n 4 'In the ' 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && grep -q "$model" <<<"$out" ||
  { echo "$out"; fail "a damaged packaged model gave exit $rc without naming $model"; }
cp "$scratch/model.keep" "$model"

# The full package: a small model under fplab.torch, from the unpacked tree
# and then from the build tree's module; each prints the digest of its
# split-k(8) logits' bits.
cat >"$scratch/torch_model.py" <<'PY'
import hashlib
import sys

site = sys.argv[1]
sys.path.insert(0, site)
import numpy as np  # noqa: E402
import torch  # noqa: E402

import fplab.torch  # noqa: E402

assert fplab.torch.__file__.startswith(site), fplab.torch.__file__
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 64), torch.nn.LayerNorm(64), torch.nn.Linear(64, 16))
x = torch.randn(4, 512)
with torch.no_grad():
    plain = model(x).numpy().view(np.uint32)
    with fplab.torch.orders("split-k(8)"):
        ordered = model(x).numpy().view(np.uint32)
differ = int((plain != ordered).sum())
# The negative control: PyTorch's own products and norm are another order.
assert differ > 0, "split-k(8) gave PyTorch's own bits"
print(f"{hashlib.sha256(ordered.tobytes()).hexdigest()} "
      f"({differ} of {ordered.size} logits differ from PyTorch's own)")
PY
from_deb=$(PYTHONPATH='' "$python" -I "$scratch/torch_model.py" "$site") ||
  fail "fplab.torch from the unpacked package"
echo "check_deb: fplab.torch split-k(8), the package's module: $from_deb"
from_build=$(PYTHONPATH='' "$python" -I "$scratch/torch_model.py" "$build/python") ||
  fail "fplab.torch from the build tree"
echo "check_deb: fplab.torch split-k(8), the build tree's module: $from_build"
[ "$from_deb" = "$from_build" ] || fail "the package's fplab.torch gives other bits than the build tree's"
echo "check_deb: PASS"
