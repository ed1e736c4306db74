"""petacomm: measure, model, map and replace MPI communication at scale.

Importing this package never initialises MPI: modules that need mpi4py import it
lazily inside the functions that use it.
"""

from petacomm.errors import PetacommError

__version__ = "0.1.0"
__all__ = ["PetacommError", "__version__"]
