"""Skill-compatible agents: strong agents that play well with weak partners (tag-team, hand-and-brain).

Hamade et al., ICLR 2024, on zerolab's core (importing only the core's surface): :mod:`~skill_compat.frameworks`
(bitstrings, roles, piece types, the two-stage hand, win-share), :mod:`~skill_compat.oracle` (Stockfish as the alter
senior and the evaluator), :mod:`~skill_compat.players` (junior, tree, brains: core agents), :mod:`~skill_compat.expectors` (the expector seniors),
:mod:`~skill_compat.teams` (the frameworks' teams as core team agents, games through the core's arena),
:mod:`~skill_compat.records` and :mod:`~skill_compat.analysis` (per-move losses, the
paper's tables), :mod:`~skill_compat.attuned` (move rules for the core's jitted self-play), the experiments' shared
code (:mod:`~skill_compat.experiment`, :mod:`~skill_compat.configs`; their runners are in ``experiments/``) and
:mod:`~skill_compat.bench`.  See ``skill_compat/README.md``.
"""
