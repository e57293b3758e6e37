"""Volcano HyperNodes: the tree, the compile step, the block, its greedy and CP-SAT parts,
sub-group policies."""
