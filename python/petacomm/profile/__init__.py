"""Communication profiling: the profile logs written by libpetacomm-prof, their analysis,
terminal and HTML reports, and profiler regions for Python programs.

Importing this package never initialises MPI.
"""

from petacomm.profile.log import SCHEMA_VERSION, Profile, load
from petacomm.profile.region import region

__all__ = ["SCHEMA_VERSION", "Profile", "load", "region"]
