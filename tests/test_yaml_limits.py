"""YAML from users is bounded before anything is built: size, nesting depth, alias
expansion — each an input error naming the file, never a crash or a runaway."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from solver import yaml_limits
from solver.config import load_conf
from solver.errors import ConfigError, ManifestError
from solver.kube import load_manifests
from solver.yaml_limits import (
    ALIAS_ALLOWANCE,
    MAX_DEPTH,
    YAMLLimitError,
    check_limits,
    safe_load_all,
)

# Nine times bigger per line: 9^7 ≈ 4.8M strings from 8 lines.
BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join(['*' + a] * 9)}]\n" for a, b in zip("abcdef", "bcdefg", strict=True)
)


def test_nesting_deeper_than_the_limit_is_refused_without_recursion() -> None:
    with pytest.raises(YAMLLimitError, match=f"deeper than {MAX_DEPTH}"):
        check_limits("[" * 100_000)
    with pytest.raises(YAMLLimitError):
        check_limits("".join(f"{'  ' * i}k{i}:\n" for i in range(MAX_DEPTH + 1)) + "  " * 101 + "v")
    check_limits("[" * MAX_DEPTH + "]" * MAX_DEPTH)


def test_an_alias_bomb_is_refused_and_honest_aliases_are_kept() -> None:
    with pytest.raises(YAMLLimitError, match="aliases expand"):
        check_limits(BILLION_LAUGHS)
    assert safe_load_all("a: &x {b: 1}\nc: *x\nd: *x\n") == [
        {"a": {"b": 1}, "c": {"b": 1}, "d": {"b": 1}}
    ]
    many = "a: &x [1, 2, 3]\n" + "".join(f"k{i}: *x\n" for i in range(ALIAS_ALLOWANCE // 4))
    assert len(safe_load_all(many)[0]) == 1 + ALIAS_ALLOWANCE // 4


def test_limit_errors_are_yaml_errors_with_a_line() -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        check_limits("a:\n  b: " + "[" * 200)
    assert "line 2" in str(caught.value)


@pytest.mark.parametrize("text", ["[" * 100_000, BILLION_LAUGHS])
def test_manifests_beyond_a_limit_name_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError) as caught:
        load_manifests(str(path))
    assert str(path) in str(caught.value)


def test_the_cli_answers_a_deep_document_with_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("[" * 100_000)
    done = subprocess.run(
        [sys.executable, "-c", "from clients.cli import main; main()", "schedule", "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert f"{path}" in done.stderr and "nested deeper" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ("[1, 2]", "data"),
        ("{volcano-scheduler.conf: 7}", "data.volcano-scheduler.conf"),
        ("{volcano-scheduler.conf: '[1, 2]'}", "data.volcano-scheduler.conf"),
        ("{volcano-scheduler.conf: 'a: [1,'}", "data.volcano-scheduler.conf"),
        ("{a: x, b: y}", "data"),
    ],
)
def test_a_configmap_with_the_wrong_data_names_the_field(
    tmp_path: Path, data: str, field: str
) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text(f"apiVersion: v1\nkind: ConfigMap\ndata: {data}\n")
    with pytest.raises(ConfigError) as caught:
        load_conf(path)
    assert caught.value.field == field


def test_a_conf_beyond_a_limit_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "conf.yaml"
    path.write_text(BILLION_LAUGHS)
    with pytest.raises(ConfigError, match="aliases expand"):
        load_conf(path)


def test_libyaml_s_own_nesting_limit_is_said_in_our_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """libyaml >= 0.2.6 (PyYAML 6.0.4) stops deep nesting before our walk counts it: the
    error is still ours, one line with the limit."""

    def deep(*_args: object, **_kwargs: object) -> object:
        mark = yaml.Mark("<unicode string>", 1000, 0, 1000, None, None)
        raise yaml.scanner.ScannerError(
            "while scanning", mark, "exceeded maximum nesting depth (1000)", mark
        )

    monkeypatch.setattr(yaml_limits.yaml, "parse", deep)
    with pytest.raises(
        yaml_limits.YAMLLimitError, match=f"nested deeper than {yaml_limits.MAX_DEPTH}"
    ):
        yaml_limits.check_limits("[" * 2000)
