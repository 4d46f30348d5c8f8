"""The report of `ddpify check` in the formats CI systems read: GitHub workflow annotations and
SARIF 2.1.0 (code scanning). Text and JSON are written by the CLI itself.

    train.py:12:27: DDP001 `rank` is the global rank, used as a GPU index: ...
    ::error file=train.py,line=12,col=27,title=DDP001::`rank` is the global rank, used as a GPU index: ...

Property values (`file=`, `title=`) escape `%`, CR, LF, `:` and `,`; the message only `%`, CR
and LF, as GitHub's own toolkit does. Every function here is pure: findings and rules in, text
out.
"""

from __future__ import annotations

import json
from typing import Iterable, Sequence
from urllib.parse import quote

from ddpify import __version__
from ddpify.check.rule import Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def escape_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped (GitHub's `escapeData`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: also `:` and `,` (GitHub's `escapeProperty`)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(path: str, line: int | None, column: int | None, code: str, message: str, bug: bool) -> str:
    """One GitHub annotation: `::error file=...,line=...,col=...,title=DDP001::message` (advice
    rules, reported only when selected, are warnings). No line for a finding that has none here
    (a notebook's cells: the message names the cell)."""
    properties = [("file", path)] + ([("line", str(line)), ("col", str(column))] if line is not None else [])
    properties.append(("title", code))
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::{'error' if bug else 'warning'} {rendered}::{escape_data(message)}"


def sarif(rules: Sequence[Rule], results: Iterable[tuple[str, int, int, str, str]]) -> dict:
    """A SARIF 2.1.0 log of one run: the rules that ran, and each (path, line, column, code,
    message) found. Paths become relative URIs (`/` separators, percent-encoded)."""
    index = {r.code: i for i, r in enumerate(rules)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "ddpify", "version": __version__,
                "rules": [{
                    "id": r.code, "name": r.name, "shortDescription": {"text": r.summary},
                    "fullDescription": {"text": r.doc},
                    "defaultConfiguration": {"level": _level(r)},
                } for r in rules]}},
            "columnKind": "unicodeCodePoints",  # columns count characters, as Python's messages do
            "results": [{
                "ruleId": code, "ruleIndex": index[code], "level": _level(rules[index[code]]),
                "message": {"text": message},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": quote(path.replace("\\", "/"))},
                    "region": {"startLine": line, "startColumn": column}}}],
            } for path, line, column, code, message in results],
        }],
    }


def sarif_text(rules: Sequence[Rule], results: Iterable[tuple[str, int, int, str, str]]) -> str:
    return json.dumps(sarif(rules, results), indent=2)


def _level(rule: Rule) -> str:
    return "error" if rule.bug else "warning"
