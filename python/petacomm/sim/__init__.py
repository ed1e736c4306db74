"""SimGrid SMPI platforms and simulated runs (``petacomm simulate``, docs/simulate.md)."""
