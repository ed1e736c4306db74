#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (idempotent) and runs the main job: petacomm doctor,
# then petacomm netbench on 4 ranks, which prints its table and writes the machine model,
# and ends with a short tour: profile the map-maker, read its report, map it on a torus.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
.venv/bin/petacomm doctor
.venv/bin/petacomm netbench -n 4 "$@"

# ---- A short tour: model the machine, profile an application, map it ----------------------
# 1. Model the machine: done just above (netbench fitted alpha and beta per operation and
#    wrote the machine model every planner reads).
# 2. Profile an application: the CMB map-maker on 8 ranks, solving for an I, Q, U sky by
#    PCG; every iteration reduces its pixels over the ranks with a SparseReducePlan whose
#    strategy the planner chose ("auto"). Its own table: iterations, time per iteration
#    split into computation and communication, bytes per reduction.
if [ ! -x .venv/bin/petacomm-mapmaker ]; then
  echo "tour skipped: petacomm-mapmaker is not built (it needs FFTW3: apt-get install libfftw3-dev)"
  exit 0
fi
tour=$(mktemp -d "${TMPDIR:-/tmp}/petacomm-tour.XXXXXX")
read -r -a launch <<<"$(.venv/bin/python -c \
  'from petacomm.launch import find_mpiexec; print(" ".join(find_mpiexec().command(8, [])))')"
.venv/bin/petacomm profile --no-banner -o "$tour/mapmaker.json" -- \
  "${launch[@]}" .venv/bin/petacomm-mapmaker --nside 32 --samples 200000
# 3. The profile's report: the phases (scan, setup, solve and its reduce) with CALC, MPI, I/O
#    and LBST per phase, the MPI calls by time, the heaviest partner pairs.
.venv/bin/petacomm report "$tour/mapmaker.json"
# 4. A mapping from the profile: which placement of the 8 ranks on a 2x2x2 torus (one rank
#    per node) contends least for the traffic the profiler recorded.
.venv/bin/petacomm map --network torus:2x2x2 --cores-per-node 1 \
  --from-profile "$tour/mapmaker.json" --candidates all --top 3
echo "tour files: $tour (more: docs/mapmaker.md, docs/madbench.md)"
