"""The gRPC service (`gangplan serve`): `gangplan.v1.PlacementService` over the library.

proto/gangplan/v1/*.proto   the contract          gangplan/v1/   its generated stubs
solver/codec/               protobuf <-> model    server/store.py   in-memory snapshots
server/servicer.py          the RPCs              server/interceptors.py   auth, metrics, logs
server/status.py            errors -> status codes, the shared request checks
server/app.py               create_server()       server/main.py    serve() with SIGTERM drain
server/settings.py          flags and GANGPLAN_* environment variables (pydantic-settings)
"""

from server.app import GangplanServer, create_server
from server.settings import Settings

__all__ = ["GangplanServer", "Settings", "create_server"]
