"""The typed gRPC client (it lives in `clients/client.py`)."""

from clients.client import Client, ClientError

__all__ = ["Client", "ClientError"]
