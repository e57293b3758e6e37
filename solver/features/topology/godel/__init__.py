"""Godel: PodGroup job-level affinity, and its NodeGroups and NodeCircles for the greedy."""
