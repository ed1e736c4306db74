"""The node-aware messaging layer from Python: shared-memory messaging inside a node, one
gateway per node, RPC to the node's servant, two-level collectives (docs/node-layer.md).

Importing this package loads nothing: the native library is loaded when a layer is made.
"""

from petacomm.node.layer import Layout, NodeFile, NodeLayer, Request, Status

__all__ = ["Layout", "NodeFile", "NodeLayer", "Request", "Status"]
