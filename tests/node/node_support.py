"""What the node tests share: whether the native node family is built, and the environment
their MPI runs use."""

from __future__ import annotations

import pytest


def _native_node_available() -> bool:
    try:
        from petacomm.node import _capi

        _capi.library()
    except Exception:  # noqa: BLE001 - any failure means: not built here
        return False
    return True


needs_native = pytest.mark.skipif(
    not _native_node_available(), reason="libpetacomm with the node family is not built"
)
# Open MPI 5 prints a harmless osc/ucx error for every shared window on machines without
# UCX transports (open-mpi/ompi#14086); the layer does not use osc/ucx.
QUIET = {"OMPI_MCA_osc": "^ucx"}
