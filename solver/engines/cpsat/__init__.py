"""The CP-SAT engine (`cpsat`) and the greedy-then-CP-SAT portfolio (`auto`)."""

from solver.engines.cpsat._solve import solve_auto, solve_cpsat

__all__ = ["solve_auto", "solve_cpsat"]
