"""Policies: one module per scheduling feature, each turning the model into parts of the Problem.

Policies never import ortools and never mutate the model.
"""
