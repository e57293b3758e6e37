"""The regression corpus: every committed input is refused with one error (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.test_fuzz import check_cli_answer

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.yaml"))


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 12


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_each_corpus_input_is_refused_with_one_error(path: Path) -> None:
    assert check_cli_answer(path.read_text(encoding="utf-8")) == 2
