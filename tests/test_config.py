"""The scheduler conf: quota plugins one at a time, and every switch either acted on or
noted (nothing in a conf is dropped in silence)."""

from __future__ import annotations

import pytest
import yaml

from solver.config import conf_from_text
from solver.errors import ConfigError

VOLCANO_DEFAULT = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
    enabledAllocatable: false
  - name: nodeorder
  - name: binpack
"""


def test_volcanos_default_conf_is_acted_on_with_one_switch_noted() -> None:
    conf = conf_from_text(VOLCANO_DEFAULT, "v.conf")
    assert conf.notes == (
        "v.conf: tiers[0].plugins[1].enablePreemptable: False is not acted on; gangplan has "
        "no switch for this part of 'gang'",
    )


@pytest.mark.parametrize(
    ("first", "second"),
    [("capacity", "proportion"), ("capacity-card", "proportion"), ("capacity", "capacity-card")],
)
def test_two_quota_plugins_are_refused(first: str, second: str) -> None:
    text = f"tiers:\n- plugins:\n  - name: {first}\n  - name: {second}\n"
    with pytest.raises(ConfigError) as err:
        conf_from_text(text, "c.conf")
    assert f"{first} and {second} must not be enabled together" in str(err.value)


def test_an_unknown_key_on_a_plugin_is_noted() -> None:
    conf = conf_from_text("tiers:\n- plugins:\n  - name: binpack\n    weigth: 3\n", "c.conf")
    assert conf.notes == (
        "c.conf: tiers[0].plugins[0].weigth: 3 is not acted on; gangplan has no switch for "
        "this part of 'binpack'",
    )


def test_a_switch_that_is_not_a_bool_is_one_line() -> None:
    text = 'tiers:\n- plugins:\n  - name: proportion\n    enabledAllocatable: "false"\n'
    with pytest.raises(ConfigError) as err:
        conf_from_text(text, "c.conf")
    assert str(err.value) == (
        "c.conf: tiers[0].plugins[0].enabledAllocatable: must be true or false, not 'false' "
        "(Volcano reads it as a bool)"
    )


def test_top_level_keys_gangplan_does_not_read_are_noted() -> None:
    """Volcano's `configurations` (action arguments) and a misspelt `tier` were dropped in
    silence."""
    conf = conf_from_text(
        "actions: 'enqueue, allocate'\ntiers: [{plugins: [{name: gang}]}]\n"
        "configurations: [{name: enqueue, arguments: {overcommit-factor: 1.2}}]\ntier: x\n",
        "c.conf",
    )
    assert [n for n in conf.notes if "not acted on (gangplan reads" in n] == [
        "c.conf: configurations: not acted on (gangplan reads actions and tiers)",
        "c.conf: tier: not acted on (gangplan reads actions and tiers)",
    ]


def test_expected_runtimes_are_read_shown_and_not_noted() -> None:
    text = "expectedRuntime:\n  default: 2h\n  priorityClasses:\n    train: 1d\n    serve: 0\n"
    conf = conf_from_text(text, "c.conf")
    assert conf.notes == ()
    assert conf.runtimes is not None
    assert (conf.runtimes.default, conf.runtimes.priority_classes) == (
        7200.0,
        {"train": 86400.0, "serve": 0.0},
    )
    assert conf.to_dict()["expectedRuntime"] == {
        "default": "7200s",
        "priorityClasses": {"train": "86400s", "serve": "0s"},
    }
    again = conf_from_text(yaml.safe_dump(conf.to_dict()), "again")
    assert again.runtimes == conf.runtimes


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("expectedRuntime: 4h", "c.conf: expectedRuntime: must be a mapping"),
        (
            "expectedRuntime:\n  defualt: 4h",
            "c.conf: expectedRuntime.defualt: unknown key 'defualt' (known: default, "
            "priorityClasses)",
        ),
        (
            "expectedRuntime:\n  default: soon",
            "c.conf: expectedRuntime.default: must be a duration such as 90m, 8h or 1w (at "
            "most ten years; 0: runs on)",
        ),
        (
            "expectedRuntime:\n  priorityClasses:\n    train: -1h",
            "c.conf: expectedRuntime.priorityClasses.train: must be a duration such as 90m, "
            "8h or 1w (at most ten years; 0: runs on)",
        ),
        (
            "expectedRuntime:\n  priorityClasses:\n    train: 99999d",
            "c.conf: expectedRuntime.priorityClasses.train: must be a duration such as 90m, "
            "8h or 1w (at most ten years; 0: runs on)",
        ),
        (
            "expectedRuntime:\n  priorityClasses: [train]",
            "c.conf: expectedRuntime.priorityClasses: must map priority class names to durations",
        ),
    ],
)
def test_a_bad_expected_runtime_is_one_line_naming_its_field(body: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        conf_from_text(body, "c.conf")
    assert str(err.value) == message
