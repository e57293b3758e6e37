"""gangplan for programs: the typed gRPC client and the generated `gangplan.v1` messages.

    import gangplan
    from gangplan.v1 import cluster_pb2 as pb

    with gangplan.Client("127.0.0.1:50051") as client:
        answer = client.place_job(job=pb.Job(...), snapshot="prod")

The client lives in `clients/client.py`; it is re-exported here lazily so that importing
`gangplan.v1` (the generated stubs) never imports the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clients.client import Client, ClientError

__all__ = ["Client", "ClientError"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        import clients.client

        return getattr(clients.client, name)
    raise AttributeError(f"module 'gangplan' has no attribute {name!r}")
