"""bench/check_sweep.py scores `ddpify check` against a manifest (issue 29): a bug is found by a
finding of its code on one of its lines, a finding is true when it matches a bug or was judged
true, and findings nobody judged are counted apart. Here on a manifest and cache of our own
fixtures (the real set's code is never committed)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys

import pytest

from tests.support.env import FIXTURES, REPO

_spec = importlib.util.spec_from_file_location("check_sweep", REPO / "bench" / "check_sweep.py")
check_sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_sweep)


def test_the_split_is_by_repository_and_fixed():
    assert {check_sweep.half("owner/a"), check_sweep.half("owner/b"), check_sweep.half("owner/c")} == \
        {"tuning", "heldout"}
    assert check_sweep.half("owner/a") == check_sweep.half("owner/a")


def test_recall_precision_and_unjudged_findings(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(FIXTURES / "check" / "DDP003" / "trigger.py", cache / "shuffle.py")
    shutil.copy(FIXTURES / "check" / "DDP003" / "near_miss.py", cache / "clean.py")
    repo = next(r for r in (f"owner/r{i}" for i in range(20)) if check_sweep.half(r) == "tuning")
    rows = [
        {"repo": repo, "commit": "0" * 40, "path": "a.py", "kind": "buggy", "key": "shuffle.py",
         "expected": [{"code": "DDP003", "lines": [8]}, {"code": "DDP006", "lines": [3]},
                      {"code": None, "lines": [4], "class": "something-unclaimed"}],
         "judged": [{"code": "DDP003", "line": 10, "true": True, "why": "a batch sampler too"},
                    {"code": "DDP003", "line": 13, "true": False, "why": "for the test"}]},
        {"repo": repo, "commit": "1" * 40, "path": "b.py", "kind": "clean", "key": "clean.py", "expected": []},
    ]
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run([sys.executable, str(REPO / "bench" / "check_sweep.py"), str(manifest), str(cache),
                          "--half", "tuning"], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    # DDP003 on line 8 found, DDP006 missed; 5 findings: 8 and 10 true, 13 false, 14 and 25 unjudged
    assert lines[-1] == ("tuning: 2 files; recall 1/2 claimed bugs (50 %), 1 unclaimed; precision 2/3 (67 %),"
                         " 2 unjudged")
    assert any(line.endswith(":3: DDP006 missed") for line in lines)
    assert any(line.endswith(":4: unclaimed (something-unclaimed)") for line in lines)
    assert any(line.endswith(":13: DDP003 false: for the test") for line in lines)
    assert sum(line.startswith("UNJUDGED") for line in lines) == 2


def test_a_rows_own_half_wins_over_the_hash(tmp_path):
    """The second set (bench/check_sweep2.jsonl) was split by another digest and records each
    row's half; the hash decides only for rows without one."""
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(FIXTURES / "check" / "DDP003" / "near_miss.py", cache / "clean.py")
    repo = next(r for r in (f"owner/r{i}" for i in range(20)) if check_sweep.half(r) == "tuning")
    row = {"repo": repo, "commit": "0" * 40, "path": "a.py", "kind": "clean", "key": "clean.py", "expected": []}
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(json.dumps({**row, "half": "heldout"}) + "\n" + json.dumps(row) + "\n")

    def files(half):
        out = subprocess.run([sys.executable, str(REPO / "bench" / "check_sweep.py"), str(manifest), str(cache),
                              "--half", half], capture_output=True, text=True, check=True).stdout
        return out.splitlines()[-1].split(":")[1].split(";")[0].strip()

    assert files("heldout") == "1 files"
    assert files("tuning") == "1 files"
    assert files("all") == "2 files"


def test_the_second_set_records_the_sha1_split_of_its_rows():
    rows = [json.loads(line) for line in (REPO / "bench" / "check_sweep2.jsonl").read_text().splitlines()]
    for row in rows:
        digest = int(hashlib.sha1(row["repo"].encode()).hexdigest(), 16)
        assert row["half"] == ("heldout" if digest % 2 else "tuning"), row["repo"]


def test_the_third_set_records_the_sha1_split_of_its_rows():
    rows = [json.loads(line) for line in (REPO / "bench" / "check_sweep3.jsonl").read_text().splitlines()]
    for row in rows:
        digest = int(hashlib.sha1(row["repo"].encode()).hexdigest(), 16)
        assert row["half"] == ("heldout" if digest % 2 else "tuning"), row["repo"]


@pytest.mark.parametrize("manifest", ["check_sweep4.jsonl", "check_sweep5.jsonl", "check_sweep6.jsonl",
                                      "check_sweep7.jsonl", "check_sweep8.jsonl",
                                      "check_sweep9.jsonl", "check_sweep9x.jsonl", "check_sweep10.jsonl",
                                      "check_sweep11.jsonl", "check_sweep11x.jsonl",
                                      "check_sweep12.jsonl", "check_sweep12x.jsonl", "check_sweep13.jsonl",
                                      "check_sweep13x.jsonl", "check_sweep14.jsonl", "check_sweep14x.jsonl",
                                      "check_sweep15.jsonl", "check_sweep15x.jsonl", "check_sweep16.jsonl",
                                      "check_sweep16x.jsonl", "check_sweep17.jsonl",
                                      "check_sweep17x.jsonl", "check_sweep18.jsonl", "check_sweep18x.jsonl",
                                      "check_sweep19.jsonl", "check_sweep19x.jsonl", "check_sweep20.jsonl", "check_sweep20x.jsonl",
                                      "check_sweep21.jsonl", "check_sweep21x.jsonl", "check_sweep22.jsonl",
                                      "check_sweep22x.jsonl", "check_sweep23.jsonl",
                                      "check_sweep23x.jsonl", "check_sweep24.jsonl",
                                      "check_sweep24x.jsonl", "check_sweep25.jsonl",
                                      "check_sweep25x.jsonl", "check_sweep26.jsonl",
                                      "check_sweep27.jsonl", "check_sweep27x.jsonl",
                                      "check_sweep28.jsonl", "check_sweep28x.jsonl",
                                      "check_sweep29.jsonl", "check_sweep29x.jsonl",
                                      "check_sweep30.jsonl", "check_sweep30x.jsonl",
                                      "check_sweep31.jsonl", "check_sweep31x.jsonl",
                                      "check_sweep32.jsonl", "check_sweep32x.jsonl"])
def test_the_fourth_to_eleventh_sets_record_the_sha256_split_of_their_rows(manifest):
    """The fourth to seventeenth sets (decisions 0040, 0047, 0050, 0053, 0058, 0061, 0066, 0073, 0081, 0084, 0089, 0090, 0097, 0098, 0105, 0106, 0112, 0113, 0122, 0123, 0131, 0132, 0141, 0142, 0150, 0151, 0159, 0160, 0168, 0169, 0177, 0178, 0187, 0188, 0195, 0196;
    11x to 24x are the eleventh to twenty-fourth sets' second files, 20 the twentieth set, 21 the twenty-first, 22 the twenty-second, 23 the twenty-third, 24 the twenty-fourth, 25 the twenty-fifth, 25x its second file) were split by `half()`, sha256 parity, before `check` ran on them; each
    row records its half, and every expected bug names a rule or, unclaimed, a class."""
    rows = [json.loads(line) for line in (REPO / "bench" / manifest).read_text().splitlines()]
    for row in rows:
        digest = int(hashlib.sha256(row["repo"].encode()).hexdigest(), 16)
        assert row["half"] == ("heldout" if digest % 2 else "tuning"), row["repo"]
        assert all(bug["code"] or bug.get("class") for bug in row["expected"]), row["key"]


def test_whole_repo_mode_checks_a_file_inside_its_repositorys_tree(tmp_path):
    """--whole-repo fills CACHE/KEY with the repository's Python files at the commit and runs
    `ddpify check PATH` in that tree (decision 0035)."""
    mirrors = tmp_path / "mirrors"
    git = mirrors / "owner+proj" / "repo"
    (git / "pkg").mkdir(parents=True)
    shutil.copy(FIXTURES / "check" / "DDP003" / "trigger.py", git / "pkg" / "train.py")
    (git / "pkg" / "__init__.py").write_text("")
    (git / "notes.txt").write_text("not Python: left out of the tree\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(git), *command], check=True, env=env)
    commit = subprocess.check_output(["git", "-C", str(git), "rev-parse", "HEAD"], text=True).strip()
    row = {"half": "tuning", "repo": "owner/proj", "commit": commit, "path": "pkg/train.py", "kind": "buggy",
           "key": f"owner+proj@{commit[:12]}", "expected": [{"code": "DDP003", "lines": [8]}]}
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(json.dumps(row) + "\n")
    cache = tmp_path / "cache"
    sweep = [sys.executable, str(REPO / "bench" / "check_sweep.py"), str(manifest), str(cache), "--whole-repo"]
    subprocess.run([*sweep, "--fill-from", str(mirrors)], check=True)
    tree = cache / row["key"]
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()) == \
        ["pkg/__init__.py", "pkg/train.py"]
    saved = tmp_path / "findings.jsonl"
    out = subprocess.run([*sweep, "--save-findings", str(saved)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[-1].startswith("tuning: 1 files; recall 1/1 claimed bugs (100 %), 0 unclaimed;")
    # a held-out run is run once: its saved findings are scored again without running check
    rescored = subprocess.run([*sweep, "--findings", str(saved)], capture_output=True, text=True,
                              check=True).stdout.splitlines()
    assert rescored == out and json.loads(saved.read_text())["findings"][0][:2] == ["DDP003", 8]


def test_a_tree_keeps_what_marks_its_projects_root(tmp_path):
    """A script three folders below its project's root imports the project's package, as its
    checkout does (`pyproject.toml` there tells `check` how far up the project goes): the tree
    keeps that file and an empty `.git`, so the package that joins the process group is read and
    the wrap is not taken for one that never joins (DDP026)."""
    mirrors = tmp_path / "mirrors"
    git = mirrors / "owner+deep" / "repo"
    (git / "pkg").mkdir(parents=True)
    (git / "examples" / "a" / "b").mkdir(parents=True)
    (git / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (git / "pkg" / "__init__.py").write_text("")
    (git / "pkg" / "launch.py").write_text("import torch.distributed as dist\n\n\ndef join():\n"
                                           "    dist.init_process_group('nccl')\n")
    (git / "examples" / "a" / "b" / "train.py").write_text(
        "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "from pkg.launch import join\n\njoin()\nmodel = DDP(torch.nn.Linear(2, 2).cuda())\n"
        "model(torch.ones(1, 2).cuda()).sum().backward()\ndist.destroy_process_group()\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(git), *command], check=True, env=env)
    commit = subprocess.check_output(["git", "-C", str(git), "rev-parse", "HEAD"], text=True).strip()
    row = {"half": "tuning", "repo": "owner/deep", "commit": commit, "path": "examples/a/b/train.py", "kind": "clean",
           "key": f"owner+deep@{commit[:12]}", "expected": []}
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text(json.dumps(row) + "\n")
    cache = tmp_path / "cache"
    sweep = [sys.executable, str(REPO / "bench" / "check_sweep.py"), str(manifest), str(cache), "--whole-repo"]
    subprocess.run([*sweep, "--fill-from", str(mirrors)], check=True)
    tree = cache / row["key"]
    assert (tree / "pyproject.toml").is_file() and (tree / ".git").is_dir()
    out = subprocess.run(sweep, capture_output=True, text=True, check=True).stdout.splitlines()
    assert f"clean  owner/deep@{commit[:7]}:examples/a/b/train.py: 0 findings" in out


def test_the_ninth_sets_more_bug_fixes_use_no_repository_of_another_set():
    """bench/check_sweep9x.jsonl adds bug fixes to the ninth set from projects no other set used."""
    def repos(path):
        return {json.loads(line)["repo"].lower() for line in path.read_text().splitlines()}
    extra = REPO / "bench" / "check_sweep9x.jsonl"
    others = set().union(*(repos(p) for p in (REPO / "bench").glob("check_sweep*.jsonl") if p != extra))
    assert not repos(extra) & others


@pytest.mark.parametrize("manifest", ["check_sweep10.jsonl", "check_sweep11.jsonl", "check_sweep11x.jsonl",
                                      "check_sweep12.jsonl", "check_sweep12x.jsonl", "check_sweep13.jsonl",
                                      "check_sweep13x.jsonl", "check_sweep14.jsonl", "check_sweep14x.jsonl",
                                      "check_sweep15.jsonl", "check_sweep15x.jsonl", "check_sweep16.jsonl",
                                      "check_sweep16x.jsonl", "check_sweep17.jsonl",
                                      "check_sweep17x.jsonl", "check_sweep18.jsonl", "check_sweep18x.jsonl",
                                      "check_sweep19.jsonl", "check_sweep19x.jsonl", "check_sweep20.jsonl", "check_sweep20x.jsonl",
                                      "check_sweep21.jsonl", "check_sweep21x.jsonl", "check_sweep22.jsonl",
                                      "check_sweep22x.jsonl", "check_sweep23.jsonl",
                                      "check_sweep23x.jsonl", "check_sweep24.jsonl",
                                      "check_sweep24x.jsonl", "check_sweep25.jsonl",
                                      "check_sweep25x.jsonl", "check_sweep26.jsonl",
                                      "check_sweep27.jsonl", "check_sweep27x.jsonl",
                                      "check_sweep28.jsonl", "check_sweep28x.jsonl",
                                      "check_sweep29.jsonl", "check_sweep29x.jsonl",
                                      "check_sweep30.jsonl", "check_sweep30x.jsonl",
                                      "check_sweep31.jsonl", "check_sweep31x.jsonl",
                                      "check_sweep32.jsonl", "check_sweep32x.jsonl"])
def test_the_tenth_and_eleventh_sets_use_no_repository_of_another_set(manifest):
    """bench/check_sweep10.jsonl, bench/check_sweep11.jsonl and its second file bench/check_sweep11x.jsonl,
    bench/check_sweep12.jsonl and its second file bench/check_sweep12x.jsonl, bench/check_sweep13.jsonl and
    its second file bench/check_sweep13x.jsonl, and bench/check_sweep14.jsonl and its second file
    bench/check_sweep14x.jsonl, and bench/check_sweep15.jsonl and its second file bench/check_sweep15x.jsonl, and the sixteenth set, bench/check_sweep16.jsonl, and its second file bench/check_sweep16x.jsonl, and the seventeenth set, bench/check_sweep17.jsonl, and its second file bench/check_sweep17x.jsonl, and the eighteenth set, bench/check_sweep18.jsonl, and its second file bench/check_sweep18x.jsonl, and the nineteenth set, bench/check_sweep19.jsonl, and its second file, bench/check_sweep19x.jsonl, and the twentieth set, bench/check_sweep20.jsonl, and its second file, bench/check_sweep20x.jsonl, and the twenty-first set, bench/check_sweep21.jsonl, and its second file, bench/check_sweep21x.jsonl, and the twenty-second set, bench/check_sweep22.jsonl, and its second file, bench/check_sweep22x.jsonl, and the twenty-third set, bench/check_sweep23.jsonl, and its second file, bench/check_sweep23x.jsonl, and the twenty-fourth set, bench/check_sweep24.jsonl, and its second file, bench/check_sweep24x.jsonl, and the twenty-fifth set, bench/check_sweep25.jsonl, and its second file, bench/check_sweep25x.jsonl, and the twenty-sixth set, bench/check_sweep26.jsonl, and the twenty-seventh set, bench/check_sweep27.jsonl, and its second file, bench/check_sweep27x.jsonl, and the twenty-eighth set, bench/check_sweep28.jsonl, and its second file, bench/check_sweep28x.jsonl, and the twenty-ninth set, bench/check_sweep29.jsonl, and its second file, bench/check_sweep29x.jsonl, and the thirtieth set, bench/check_sweep30.jsonl, and its second file, bench/check_sweep30x.jsonl, and the thirty-first set, bench/check_sweep31.jsonl, and its second file, bench/check_sweep31x.jsonl, and the thirty-second set, bench/check_sweep32.jsonl, and its second file, bench/check_sweep32x.jsonl (decisions 0066, 0073, 0081, 0084, 0089,
    0090, 0097, 0098, 0105, 0106, 0112, 0113, 0122, 0123, 0131, 0132, 0141, 0142, 0150, 0151, 0159, 0160, 0168, 0169, 0177, 0178, 0187, 0188, 0195, 0196, 0204, 0215, 0216, 0227, 0228, 0238, 0239, 0248, 0249, 0258, 0259, 0269, 0270) are drawn from projects
    no other set used."""
    def repos(path):
        return {json.loads(line)["repo"].lower() for line in path.read_text().splitlines()}
    fresh = REPO / "bench" / manifest
    others = set().union(*(repos(p) for p in (REPO / "bench").glob("check_sweep*.jsonl") if p != fresh))
    assert not repos(fresh) & others
