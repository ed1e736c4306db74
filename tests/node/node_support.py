"""What the node tests share: the environment their MPI runs use. (A library without the
node family fails the tests that load it; it is never a reason to skip.)"""

from __future__ import annotations

# Open MPI 5 prints a harmless osc/ucx error for every shared window on machines without
# UCX transports (open-mpi/ompi#14086); the layer does not use osc/ucx.
QUIET = {"OMPI_MCA_osc": "^ucx"}
