"""Kueue Topology Aware Scheduling: pod sets, Kueue's TAS algorithm, placement and the
TopologyAssignment."""
