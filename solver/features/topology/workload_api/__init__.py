"""PodGroup topology outside Godel, run on Godel's job-affinity plan (`godel/`).

affinity.py   the Kubernetes Workload API's `schedulingConstraints.topology` (one
              required key, domains tried tightest first, KEP-5732) and KAI-Scheduler's
              `requiredTopologyLevel` / `preferredTopologyLevel` (least GPU room first),
              read as job-level affinity terms, and each dialect's words for its rule
subgroups.py  KAI sub-groups, each in one domain of its own inside its PodGroup's
nested.py     the greedy's nested fill of those sub-groups
"""
