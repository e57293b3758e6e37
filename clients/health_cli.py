"""`gangplan health`: a gRPC health check of a running server, for container probes and
scripts (exit 0 when SERVING, 1 otherwise, 2 when the server cannot be reached)."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from clients._options import Output, OutputFormat
from clients.client import Client, ClientError
from clients.render import write_data

__all__ = ["health_cmd"]


def health_cmd(
    server: Annotated[
        str, typer.Option("--server", help="The server, host:port.")
    ] = "127.0.0.1:50051",
    service: Annotated[
        str, typer.Option("--service", help='One service ("" : the whole server).')
    ] = "",
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds.")] = 3.0,
    output: OutputFormat = Output.table,
) -> None:
    """Ask grpc.health.v1 Check: prints the status; exit 0 only when SERVING. TLS: the CA
    from GANGPLAN_CA_CERT (health needs no token)."""
    ca = os.environ.get("GANGPLAN_CA_CERT") or None
    try:
        with Client(server, ca_cert=ca, retries=0) as client:
            status = client.health(service, timeout=timeout)
    except ClientError as err:
        sys.stderr.write(f"error: {server}: {err}\n")
        raise typer.Exit(2) from None
    if output is Output.table:  # the bare status, as probes and scripts compare it
        sys.stdout.write(status + "\n")
    else:
        write_data({"server": server, "service": service, "status": status}, output)
    raise typer.Exit(0 if status == "SERVING" else 1)
