"""A small method package that exercises every hook of the core, the way contempt_search, sai_go and skill_compat
plug in: it imports only the core's declared surface (``zerolab`` and the layer packages' ``__all__``).

* ``rules.counting_rules`` — search rules with per-node state (simulations through each node) and a summary.
* ``network.make_network`` — a network with an extra output (``extras["ply_estimate"]``).
* ``method.make_method`` — a method whose loss trains that extra output on a per-frame extra field (``ply``), whose
  games start from FENs, and whose per-ply move rule alternates the learner with a frozen partner network that
  always plays its lowest legal action id, counting the partner's moves in the rule's per-game carry.
"""
