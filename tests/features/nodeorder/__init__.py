"""Volcano `nodeorder`: kube-scheduler's NodeAffinity and TaintToleration scores."""
