"""Recall and precision of `ddpify check` on real DDP code it was not written on (issue 29).

    python bench/check_sweep.py bench/check_sweep.jsonl CACHE --half tuning
    python bench/check_sweep.py bench/check_sweep.jsonl CACHE --half heldout   # once, at the end
    python bench/check_sweep.py bench/check_sweep.jsonl CACHE --fill-from MIRRORS   # fill CACHE
    python bench/check_sweep.py bench/check_sweep3.jsonl CACHE --whole-repo [--fill-from MIRRORS]

The manifest (one JSON object a line) names public file versions, never their code: `repo`,
`commit`, `path`, `kind` (`buggy`: the parent of a commit that fixed a DDP bug, `fixed`: that
commit, `clean`: a well-kept trainer at its newest commit), `key` (the file's name in CACHE),
`expected` (the bugs the file has: `code` and the lines a finding may sit on; `code` null with a
`class` for a bug no rule claims) and, once a finding that matches no expected bug has been read,
`judged` (`code`, `line`, `true`, `why`). The code itself is never committed: `--fill-from`
copies each version out of git clones kept under MIRRORS (`MIRRORS/owner+name` or
`MIRRORS/owner+name/repo`), and every other run reads CACHE only.

With `--whole-repo` (the third set, `bench/check_sweep3.jsonl`, decision 0035) CACHE holds each
repository's tree at the commit (`CACHE/KEY/`: its Python files), and each file is
checked as a user would check it, `ddpify check --output-format json PATH` run in that tree, so
the modules and packages the file imports are read with it. `--save-findings FILE` keeps every
file's findings; `--findings FILE` scores them again without running `check` (the held-out half
is run once, its findings judged into the manifest, then scored from FILE).

The halves were fixed before `check` ran on any of it, by the repository's name (files of one
project stay together): `sha256(repo)` odd is held-out, even is tuning; a row's own `half`, where
it has one, wins (the second set, `bench/check_sweep2.jsonl`, was split by `sha1(repo)` parity and
says so row by row, decision 0032). Scores, for the half:
- recall: expected bugs of claimed classes that a finding of the same code on one of the listed
  lines reports, over all such bugs; unclaimed bugs are listed apart;
- precision: findings of the default rules that match an expected bug or were judged true,
  over all findings that are matched or judged; findings nobody has judged yet are printed
  (and counted) apart, so a figure with unjudged findings is not final.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from ddpify.check import check  # noqa: E402
from ddpify.inputs.program import PROJECT_MARKERS  # noqa: E402


def half(repo: str) -> str:
    return "heldout" if int(hashlib.sha256(repo.encode()).hexdigest(), 16) % 2 else "tuning"


def fill(rows: list[dict], cache: Path, mirrors: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    for row in rows:
        target = cache / row["key"]
        if target.exists():
            continue
        name = row["repo"].replace("/", "+")
        git = next((d for d in (mirrors / name / "repo", mirrors / name) if d.exists()), None)
        if git is None:
            print(f"no clone of {row['repo']} under {mirrors}", file=sys.stderr)
            continue
        target.write_bytes(subprocess.check_output(["git", "-C", str(git), "show", f"{row['commit']}:{row['path']}"]))


def fill_trees(rows: list[dict], cache: Path, mirrors: Path) -> None:
    """Each row's whole repository at its commit, once per (repository, commit): its Python
    files (what `check` reads; a snapshot may lack its large binary files, so no `git archive`),
    the files that mark a project's root (`pyproject.toml`, `setup.cfg`: how far above a script
    `check` looks for the project's packages, `ddpify.inputs.program`), the small tensor files it
    commits (`.pt`, `.pth` up to 1 MiB: DDP014 reads where their storages were saved,
    `ddpify.analysis.tensor_files`; trees built before round 29 lack them) and an empty `.git`, as
    in a checkout (trees built before the eleventh set hold the Python files only)."""
    cache.mkdir(parents=True, exist_ok=True)
    for row in rows:
        target = cache / row["key"]
        if target.exists():
            continue
        name = row["repo"].replace("/", "+")
        git = next((d for d in (mirrors / name / "repo", mirrors / name) if d.exists()), None)
        if git is None:
            print(f"no clone of {row['repo']} under {mirrors}", file=sys.stderr)
            continue
        listing = subprocess.check_output(["git", "-C", str(git), "ls-tree", "-r", "-l", "-z", row["commit"]])
        blobs = [(entry.split(b"\t", 1)[1].decode(), entry.split()[2].decode()) for entry in listing.split(b"\0")
                 if entry and entry.split()[1] == b"blob"
                 and (entry.endswith(b".py") or _marks_root(entry) or _small_tensor_file(entry))]
        partial = cache / (row["key"] + ".partial")
        (partial / ".git").mkdir(parents=True)
        for path, blob in blobs:
            (partial / path).parent.mkdir(parents=True, exist_ok=True)
            (partial / path).write_bytes(subprocess.check_output(["git", "-C", str(git), "cat-file", "blob", blob]))
        partial.rename(target)


# tensor files a tree keeps, up to 1 MiB each
TENSOR_FILES = (b".pt", b".pth")


def _small_tensor_file(entry: bytes) -> bool:
    """Is a `git ls-tree -l` entry a tensor file of at most 1 MiB that the snapshot holds?"""
    size = entry.split(b"\t", 1)[0].split()[3]
    return entry.endswith(TENSOR_FILES) and size.isdigit() and int(size) <= 1 << 20


def _marks_root(entry: bytes) -> bool:
    """Is a `git ls-tree` entry a file that marks a project's root (`pyproject.toml`)?"""
    return entry.split(b"\t", 1)[1].split(b"/")[-1].decode() in PROJECT_MARKERS


class Found(NamedTuple):
    """A finding as `ddpify check --output-format json` prints it."""

    code: str
    line: int
    column: int
    message: str


def check_in_tree(tree: Path, path: str) -> tuple[list[Found], str | None]:
    """`ddpify check PATH` run in the repository's tree, as a user runs it."""
    run = subprocess.run([sys.executable, "-m", "ddpify", "check", "--output-format", "json", path], cwd=tree,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    if run.returncode not in (0, 1):
        return [], f"check failed ({run.returncode}): {run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ''}"
    files = json.loads(run.stdout)["files"]
    findings = [Found(f["code"], f["line"], f["column"], f["message"]) for entry in files for f in entry["findings"]]
    return findings, next((entry["note"] for entry in files if entry.get("note")), None)


def score(row: dict, findings) -> dict:
    """Match one file's findings against what it is known to hold."""
    expected = row["expected"]
    found_bugs, matched = [], set()
    for bug in expected:
        hit = next((f for f in findings if bug["code"] == f.code and f.line in bug["lines"]), None)
        found_bugs.append(hit is not None)
        if hit is not None:
            matched.add((hit.code, hit.line))
    # a finding on another listed line of a found bug reports the same bug again: not false
    same_bug = {(b["code"], line) for b, ok in zip(expected, found_bugs) if ok for line in b["lines"]}
    judged = {(j["code"], j["line"]): j for j in row.get("judged", [])}
    true, false, unjudged = [], [], []
    for f in findings:
        key = (f.code, f.line)
        if key in matched or key in same_bug:
            true.append(f)
        elif key in judged:
            (true if judged[key]["true"] else false).append((f, judged[key]["why"]))
        else:
            unjudged.append(f)
    return {"found": found_bugs, "true": true, "false": false, "unjudged": unjudged}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("cache", type=Path)
    parser.add_argument("--half", choices=("tuning", "heldout", "all"), default="tuning")
    parser.add_argument("--fill-from", type=Path, metavar="MIRRORS")
    parser.add_argument("--whole-repo", action="store_true",
                        help="CACHE/KEY is the repository's tree; run `ddpify check PATH` inside it")
    parser.add_argument("--save-findings", type=Path, metavar="FILE",
                        help="also write every file's findings to FILE (JSON lines), to score them again later")
    parser.add_argument("--findings", type=Path, metavar="FILE",
                        help="score the findings saved by --save-findings instead of running check (a held-out "
                             "run is run once; its findings are judged, then scored from FILE)")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.manifest.read_text().splitlines() if line.strip()]
    if args.fill_from:
        (fill_trees if args.whole_repo else fill)(rows, args.cache, args.fill_from)
        return 0
    rows = [r for r in rows if args.half in ("all", r.get("half") or half(r["repo"]))]
    claimed = found = unclaimed = n_true = n_false = n_unjudged = 0
    misses, false_alarms = [], []
    saved = {}
    if args.findings:
        for line in args.findings.read_text().splitlines():
            entry = json.loads(line)
            saved[(entry["key"], entry["path"])] = ([Found(*f) for f in entry["findings"]], entry["note"])
    for row in rows:
        if args.findings:
            findings, note = saved[(row["key"], row["path"])]
        elif args.whole_repo:
            findings, note = check_in_tree(args.cache / row["key"], row["path"])
        else:
            report = check((args.cache / row["key"]).read_bytes())
            findings, note = report.findings, report.note
        if args.save_findings:
            with args.save_findings.open("a") as out:
                out.write(json.dumps({"key": row["key"], "path": row["path"], "note": note,
                                      "findings": [[f.code, f.line, f.column, f.message] for f in findings]}) + "\n")
        result = score(row, findings)
        name = f"{row['repo']}@{row['commit'][:7]}:{row['path']}"
        for bug, ok in zip(row["expected"], result["found"]):
            if bug["code"] is None:
                unclaimed += 1
                misses.append(f"{name}:{bug['lines'][0]}: unclaimed ({bug['class']})")
                continue
            claimed += 1
            found += ok
            if not ok:
                misses.append(f"{name}:{bug['lines'][0]}: {bug['code']} missed")
        n_true += len(result["true"])
        n_false += len(result["false"])
        n_unjudged += len(result["unjudged"])
        false_alarms += [f"{name}:{f.line}: {f.code} false: {why}" for f, why in result["false"]]
        for f in result["unjudged"]:
            print(f"UNJUDGED {name}:{f.line}:{f.column}: {f.code} {f.message}")
        note = f" ({note})" if note else ""
        print(f"{row['kind']:6} {name}: {len(findings)} findings{note}")
    print(*misses, sep="\n")
    print(*false_alarms, sep="\n")
    judged = n_true + n_false
    print(f"{args.half}: {len(rows)} files; recall {found}/{claimed} claimed bugs"
          f" ({100 * found / max(claimed, 1):.0f} %), {unclaimed} unclaimed;"
          f" precision {n_true}/{judged} ({100 * n_true / max(judged, 1):.0f} %), {n_unjudged} unjudged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
