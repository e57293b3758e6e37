"""The codec tests that also ask a real server use its fixture."""

from tests.server.conftest import start  # noqa: F401  (the `start` fixture)
