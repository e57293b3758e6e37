"""Clients of gangplan: the `gangplan` command line (and, with the gRPC service, API clients)."""
