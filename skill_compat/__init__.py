"""Skill-compatible agents: strong agents that play well with weak partners (tag-team, hand-and-brain)."""
