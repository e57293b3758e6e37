"""Write the generated reference pages of the documentation site from the source:

    docs/reference/grpc.md   the gRPC API, from the comments of proto/gangplan/v1/*.proto
    docs/reference/cli.md    the command line, from the Typer app (clients/cli.py)
    docs/reference/fields.md the fields gangplan notes or leaves, from solver/kube/fields.py

    .venv/bin/python scripts/gen_docs.py            # write them
    .venv/bin/python scripts/gen_docs.py --check    # exit 1 if a committed page is stale

The Python API page (docs/reference/python.md) is rendered by mkdocstrings at build time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import grpc_tools
import typer
from google.protobuf import descriptor_pb2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clients.cli import app  # noqa: E402
from solver.kube import fields  # noqa: E402

PROTO = ROOT / "proto"
OUT = ROOT / "docs" / "reference"
# FileDescriptorProto field numbers (descriptor.proto), the paths of SourceCodeInfo
MESSAGE, ENUM, SERVICE = 4, 5, 6
FIELD, NESTED, NESTED_ENUM, VALUE, METHOD = 2, 3, 4, 2, 2
LABELS = {descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED: "repeated "}
SCALARS = {
    v: k.removeprefix("TYPE_").lower()
    for k, v in descriptor_pb2.FieldDescriptorProto.Type.items()
    if k not in ("TYPE_MESSAGE", "TYPE_ENUM", "TYPE_GROUP")
}


def _descriptors() -> descriptor_pb2.FileDescriptorSet:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        includes = Path(grpc_tools.__file__).parent / "_proto"
        files = sorted(str(p.relative_to(PROTO)) for p in PROTO.rglob("*.proto"))
        subprocess.run(
            [
                *(sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO}", f"-I{includes}"),
                *("--include_source_info", f"--descriptor_set_out={out}", *files),
            ],
            check=True,
        )
        return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


def _comment(text: str) -> str:
    """A proto comment as Markdown text (one paragraph per blank line)."""
    lines = [line[1:] if line.startswith(" ") else line for line in text.rstrip().splitlines()]
    return "\n".join(lines).strip()


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


MAPS: dict[str, tuple[descriptor_pb2.FieldDescriptorProto, ...]] = {}  # entry type -> key, value


def _maps(messages: list[descriptor_pb2.DescriptorProto], scope: str) -> None:
    for message in messages:
        name = f"{scope}.{message.name}"
        if message.options.map_entry:
            MAPS[name] = tuple(message.field)
        _maps(list(message.nested_type), name)


def _type(field: descriptor_pb2.FieldDescriptorProto) -> str:
    if entry := MAPS.get(field.type_name):
        key, value = (f.type_name.rsplit(".", 1)[-1] or SCALARS[f.type] for f in entry)
        return f"`map<{key}, {value}>`"
    name = field.type_name.rsplit(".", 1)[-1] if field.type_name else SCALARS[field.type]
    if field.type_name.startswith(".gangplan."):
        name = f"[{name}](#{name.lower()})"
    return LABELS.get(field.label, "") + name


def grpc_reference() -> str:
    out = [
        "# gRPC API reference",
        "",
        "Generated from the comments of `proto/gangplan/v1/*.proto` by `scripts/gen_docs.py`;",
        "the `.proto` files are the contract. Package `gangplan.v1`.",
        "",
    ]
    files = _descriptors().file
    for file in files:
        _maps(list(file.message_type), f".{file.package}")
    for file in files:
        comments = {
            tuple(loc.path): _comment(loc.leading_comments)
            for loc in file.source_code_info.location
            if loc.leading_comments
        }
        out += [f"## `{file.name}`", ""]
        if head := comments.get((12,)):  # the syntax statement carries the file's comment
            out += [head, ""]
        for s, service in enumerate(file.service):
            out += [f"### {service.name}", "", comments.get((SERVICE, s), ""), ""]
            out += ["| method | request → response | what it does |", "| --- | --- | --- |"]
            for m, method in enumerate(service.method):
                io = f"[{method.input_type.rsplit('.', 1)[-1]}](#{method.input_type.rsplit('.', 1)[-1].lower()}) → {method.output_type.rsplit('.', 1)[-1]}"
                out.append(
                    f"| `{method.name}` | {io} | {_cell(comments.get((SERVICE, s, METHOD, m), ''))} |"
                )
            out.append("")
        for e, enum in enumerate(file.enum_type):
            out += _enum(enum, comments, (ENUM, e))
        for i, message in enumerate(file.message_type):
            out += _message(message, comments, (MESSAGE, i))
    return "\n".join(out).rstrip() + "\n"


def _message(
    message: descriptor_pb2.DescriptorProto,
    comments: dict[tuple[int, ...], str],
    path: tuple[int, ...],
    prefix: str = "",
) -> list[str]:
    out = [f"### {prefix}{message.name}", ""]
    if text := comments.get(path):
        out += [text, ""]
    if message.field:
        out += ["| field | type | meaning |", "| --- | --- | --- |"]
        for f, field in enumerate(message.field):
            text = _cell(comments.get((*path, FIELD, f), ""))
            out.append(f"| `{field.name}` | {_type(field)} | {text} |")
        out.append("")
    for e, enum in enumerate(message.enum_type):
        out += _enum(enum, comments, (*path, NESTED_ENUM, e), f"{prefix}{message.name}.")
    for n, nested in enumerate(message.nested_type):
        if not nested.options.map_entry:
            out += _message(nested, comments, (*path, NESTED, n), f"{prefix}{message.name}.")
    return out


def _enum(
    enum: descriptor_pb2.EnumDescriptorProto,
    comments: dict[tuple[int, ...], str],
    path: tuple[int, ...],
    prefix: str = "",
) -> list[str]:
    out = [f"### {prefix}{enum.name}", ""]
    if text := comments.get(path):
        out += [text, ""]
    out += ["| value | number | meaning |", "| --- | ---: | --- |"]
    for v, value in enumerate(enum.value):
        text = _cell(comments.get((*path, VALUE, v), ""))
        out.append(f"| `{value.name}` | {value.number} | {text} |")
    return [*out, ""]


def cli_reference() -> str:
    root = typer.main.get_command(app)
    out = [
        "# Command-line reference",
        "",
        "Generated from the Typer app (`clients/cli.py`) by `scripts/gen_docs.py`; "
        "`gangplan COMMAND --help` prints the same.",
        "",
    ]
    out += _command(root, ["gangplan"])
    return "\n".join(out).rstrip() + "\n"


def _command(command: Any, path: list[str]) -> list[str]:
    """One command's section, then its subcommands' (Typer's own click, duck-typed)."""
    ctx = command.context_class(command, info_name=" ".join(path))
    out: list[str] = []
    if len(path) > 1:
        out += [f"{'#' * min(len(path), 4)} `{' '.join(path)}`", ""]
    if command.help:
        out += [command.help.strip(), ""]
    out += [
        "```",
        " ".join(command.collect_usage_pieces(ctx)).join((f"{' '.join(path)} ", "")),
        "```",
        "",
    ]
    params = [p for p in command.get_params(ctx) if p.name != "help"]
    if params:
        out += ["| argument or option | default | meaning |", "| --- | --- | --- |"]
        for p in params:
            names = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
            default = "" if p.default is None or callable(p.default) else f"`{p.default}`"
            if p.required:
                default = "required"
            out.append(f"| {names} | {_cell(default)} | {_cell(getattr(p, 'help', '') or '')} |")
        out.append("")
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                out += _command(sub, [*path, name])
    return out


def fields_reference() -> str:
    """What gangplan does with the fields it does not place by (`solver/kube/fields.py`)."""
    out = [
        "# Fields noted and fields not read",
        "",
        "Generated from `solver/kube/fields.py` by `scripts/gen_docs.py`. Every field of every",
        "object kind gangplan reads is acted on, noted when present (a `note:` line naming",
        "it), refused with a one-line error, or listed here as not scheduling input. Two tests",
        "walk the upstream schemas so that nothing is dropped in silence: the core objects'",
        "(`tests/kube/test_fields.py`, the Kubernetes API's own schema) and every other kind's",
        "(`tests/kube/test_crd_fields.py`, each project's CRD, vendored with its source).",
        "",
        "## Noted when a pending pod sets them",
        "",
        "| object | field | why it is not acted on |",
        "| --- | --- | --- |",
    ]
    for kind, entries in sorted(fields.NOTED.items()):
        out += [f"| {kind} | `{f}` | {_cell(why)} |" for f, why in sorted(entries.items())]
    out += [
        "",
        "## Acted on (`spec`); any other `spec` field is noted",
        "",
        "| kind | fields acted on |",
        "| --- | --- |",
    ]
    for kind, acted in sorted(fields.ACTED.items()):
        out.append(f"| `{kind}` | {', '.join(f'`{f}`' for f in sorted(acted))} |")
    out += ["", "## Not scheduling input", "", "| object | field | why |", "| --- | --- | --- |"]
    rows = [(k, f, why) for k, e in fields.IGNORED.items() for f, why in e.items()]
    rows += [(f"`{k}`", f, why) for k, e in fields.CRD_IGNORED.items() for f, why in e.items()]
    out += [f"| {k} | `{f}` | {_cell(why)} |" for k, f, why in sorted(rows)]
    return "\n".join(out) + "\n"


PAGES = {"grpc.md": grpc_reference, "cli.md": cli_reference, "fields.md": fields_reference}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a page is stale")
    args = parser.parse_args()
    stale = []
    for name, render in PAGES.items():
        path, text = OUT / name, render()
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        sys.exit(f"stale (run scripts/gen_docs.py): {', '.join(stale)}")


if __name__ == "__main__":
    main()
