#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (idempotent) and runs the main job: petacomm doctor,
# then petacomm netbench on 4 ranks, which prints its table and writes the machine model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
.venv/bin/petacomm doctor
.venv/bin/petacomm netbench -n 4 "$@"
