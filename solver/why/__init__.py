"""Why a gang is not placed: certificates, proven where they can be (`certify.py`), and
the explanation model they fall back on (`core.py`)."""

from solver.why.certify import WHY_SECONDS, Certified, certify
from solver.why.core import explain_gang

__all__ = [
    "WHY_SECONDS",
    "Certified",
    "certify",
    "explain_gang",
]
