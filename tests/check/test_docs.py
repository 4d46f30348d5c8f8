"""The rules' documentation against the rules: README's table against the registry, and each
rule's wrong/right example (what `ddpify check --explain` shows) checked: the wrong one is found,
the right one is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddpify.check import RULES, check, select

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_rule_table_matches_the_registry():
    text = README.read_text()
    table = text[text.index("| code | name | what it finds | fix |"):].split("\n\n", 1)[0]
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in table.splitlines()[2:]]
    assert [(code, name) for code, name, _, _ in rows] == [(f"`{r.code}`", f"`{r.name}`") for r in RULES]
    assert [bool(fix) for *_, fix in rows] == [r.fixable for r in RULES]


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_wrong_example_is_found_and_right_example_is_not(rule):
    alone = select(frozenset({rule.code}))
    assert {f.code for f in check(rule.example("Wrong"), alone).findings} == {rule.code}
    assert check(rule.example("Right"), alone).findings == []


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_explanation_has_a_summary_line_and_both_examples(rule):
    lines = rule.doc.splitlines()
    assert lines[0].endswith(".") and len(lines[0]) <= 100 and lines[1] == ""
    assert rule.doc.count("\nWrong:\n") == 1 and rule.doc.count("\nRight:\n") == 1
