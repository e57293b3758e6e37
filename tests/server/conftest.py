"""Fixtures for the gRPC service: real servers on 127.0.0.1 port 0, clients, test certificates.

start(token="t", workers=1)      a started server (stopped at teardown) and its port
certs                            a CA, a server cert for 127.0.0.1, a client cert, and a
                                 client cert from a second (untrusted) CA, as PEM files
"""

from __future__ import annotations

import datetime
import ipaddress
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gangplan.v1 import cluster_pb2 as pb
from server import GangplanServer, Settings, create_server

GPU = "nvidia.com/gpu"
# `gangplan serve` as a process of its own, on free gRPC and metrics ports (two suites at
# once must not collide on the default :9464)
SERVE = [
    sys.executable, "-c", "from clients.cli import main; main()",
    "serve", "--port", "0", "--metrics-port", "0",
]  # fmt: skip


def gpu_node(name: str, gpus: int = 4, cpu: int = 32_000, **labels: str) -> pb.Node:
    return pb.Node(name=name, labels=labels, allocatable={"cpu": cpu, GPU: gpus, "pods": 110})


def gpu_pod(name: str, gang: str = "", gpus: int = 1, node: str = "", **kw: Any) -> pb.Pod:
    return pb.Pod(
        namespace="default",
        name=name,
        gang=gang,
        requests={"cpu": 1000, GPU: gpus},
        node_name=node,
        **kw,
    )


def gang_job(name: str, size: int, gpus: int = 1) -> pb.Job:
    """A gang of `size` pods, all required, each asking for `gpus` GPUs."""
    return pb.Job(
        gangs=[pb.Gang(namespace="default", name=name, min_member=size)],
        pods=[gpu_pod(f"{name}-{i}", gang=f"default/{name}", gpus=gpus) for i in range(size)],
    )


def small_cluster(nodes: int = 3, gpus: int = 4) -> pb.Cluster:
    return pb.Cluster(nodes=[gpu_node(f"n{i}", gpus) for i in range(nodes)])


@pytest.fixture
def start() -> Iterator[Callable[..., tuple[GangplanServer, int]]]:
    servers: list[GangplanServer] = []

    def factory(schedule_fn: Any = None, **overrides: Any) -> tuple[GangplanServer, int]:
        settings = Settings(
            **{"host": "127.0.0.1", "port": 0, "metrics_port": None, "grace": 1.0, **overrides}
        )
        srv, port = create_server(settings, schedule_fn=schedule_fn)
        srv.start()
        servers.append(srv)
        return srv, port

    yield factory
    for srv in servers:
        srv.stop(0)


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path  # client certificate signed by a CA the server does not trust
    rogue_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _ca(cn: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(
    cn: str,
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    usage: x509.ObjectIdentifier,
    server: bool,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca[0].subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca[1].public_key()),
            critical=False,
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return builder.sign(ca[1], hashes.SHA256()), key


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    d = tmp_path_factory.mktemp("certs")
    ca = _ca("gangplan test CA")
    rogue_ca = _ca("someone else's CA")
    pem = serialization.Encoding.PEM
    paths: dict[str, Path] = {}
    (d / "ca.pem").write_bytes(ca[0].public_bytes(pem))
    for name, (cert, key) in {
        "server": _leaf("gangplan-server", ca, ExtendedKeyUsageOID.SERVER_AUTH, True),
        "client": _leaf("front-end", ca, ExtendedKeyUsageOID.CLIENT_AUTH, False),
        "rogue": _leaf("stranger", rogue_ca, ExtendedKeyUsageOID.CLIENT_AUTH, False),
    }.items():
        paths[f"{name}_cert"] = d / f"{name}.pem"
        paths[f"{name}_key"] = d / f"{name}-key.pem"
        paths[f"{name}_cert"].write_bytes(cert.public_bytes(pem))
        _write_key(paths[f"{name}_key"], key)
    return Certs(ca=d / "ca.pem", **paths)
