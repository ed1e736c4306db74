"""Topology-aware mapping: networks, routing, patterns, placements, metrics, launcher files.

Modules (one concept each): ``network`` (torus/mesh, fat tree, dragonfly and their text
forms), ``node_hierarchy`` (inside a node), ``routing`` (link loads per routing model),
``pattern`` / ``pattern_language`` / ``measured`` (who talks to whom), ``schedules``
(collective algorithms as ordered messages), ``mapping`` and ``mapping_search``
(placements), ``metrics`` (contention, hop-bytes, predicted time), ``flow_model`` (the
max-min flow time),
``ranking`` (compare candidates), ``launcher_files`` (what launchers read), ``cli`` and
``benchmark`` (the ``petacomm map`` command).
"""
