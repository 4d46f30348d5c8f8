"""bench/check_mutants.py seeds one classic DDP bug at a time into clean code and asks whether
`ddpify check` finds it (issue 29, decision 0220): each operator applies where the edit surely
makes its bug and skips its near misses; a mutant is killed by a new finding of its rule near
the edit. Tool tests on small trees of our own (no torch)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.support.env import REPO

_spec = importlib.util.spec_from_file_location("check_mutants", REPO / "bench" / "check_mutants.py")
check_mutants = sys.modules["check_mutants"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_mutants)

CLEAN = '''\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(torch.nn.Linear(4, 4).cuda(), device_ids=[local_rank])
    if os.path.exists("ckpt.pt"):
        state = torch.load("ckpt.pt", map_location=f"cuda:{local_rank}")
        model.module.load_state_dict(state)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4))
    sampler = DistributedSampler(data, rank=rank)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for (x,) in loader:
            opt.zero_grad()
            model(x.cuda()).sum().backward()
            opt.step()
        if rank == 0:
            torch.save(model.module.state_dict(), "ckpt.pt")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''

# operator -> (the line it edits, the lines of the mutant that differ from CLEAN's)
SEEDED = {
    "set_epoch-deleted": (22, ["-        sampler.set_epoch(epoch)"]),
    "rank0-guard-removed": (27, ["-        if rank == 0:", "-            torch.save(model.module.state_dict(), \"ckpt.pt\")",
                                 "+        torch.save(model.module.state_dict(), \"ckpt.pt\")"]),
    "module-dropped": (28, ["-            torch.save(model.module.state_dict(), \"ckpt.pt\")",
                            "+            torch.save(model.state_dict(), \"ckpt.pt\")"]),
    "map_location-removed": (15, ["-        state = torch.load(\"ckpt.pt\", map_location=f\"cuda:{local_rank}\")",
                                  "+        state = torch.load(\"ckpt.pt\")"]),
    "sampler-to-shuffle": (19, ["-    loader = DataLoader(data, batch_size=8, sampler=sampler)",
                                "+    loader = DataLoader(data, batch_size=8, shuffle=True)"]),
    "collective-under-rank0": (29, ["-        dist.barrier()", "+        if rank == 0:", "+            dist.barrier()"]),
    "global-rank-as-device": (12, ["-    torch.cuda.set_device(local_rank)", "+    torch.cuda.set_device(rank)"]),
    "local-rank-as-sampler-rank": (18, ["-    sampler = DistributedSampler(data, rank=rank)",
                                        "+    sampler = DistributedSampler(data, rank=local_rank)"]),
}


def _changed(before: str, after: str) -> list[str]:
    import difflib
    return [line.rstrip("\n") for line in difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm="")
            if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def _sites(source: str, operator: str) -> list:
    return [m for m in check_mutants.mutants(source) if m.operator == operator]


@pytest.mark.parametrize("operator", sorted(SEEDED))
def test_each_operator_seeds_its_bug_once(operator):
    [mutant] = _sites(CLEAN, operator)
    line, diff = SEEDED[operator]
    assert mutant.line == line
    assert _changed(CLEAN, mutant.code) == diff
    compile(mutant.code, "mutant.py", "exec")


def test_every_operator_names_a_rule_check_has():
    from ddpify.check import CODES
    assert {op.name for op in check_mutants.OPERATORS} == set(SEEDED)
    assert all(code in CODES for op in check_mutants.OPERATORS for code in op.codes)


# near misses: the edit would make no bug (or not surely one), so the operator skips the site
NEAR_MISSES = {
    "set_epoch-deleted": [
        ("sampler = DistributedSampler(data, rank=rank)", "sampler = DistributedSampler(data, shuffle=False)"),
        ("loader = DataLoader(data, batch_size=8, sampler=sampler)", "loader = DataLoader(data, batch_size=8)"),
        ("        sampler.set_epoch(epoch)\n", "        sampler.set_epoch(epoch)\n        sampler.set_epoch(epoch)\n"),
        ("sampler", "val_sampler"),
    ],
    "rank0-guard-removed": [
        ("            torch.save(model.module.state_dict(), \"ckpt.pt\")\n",
         "            torch.save(model.module.state_dict(), \"ckpt.pt\")\n        else:\n            pass\n"),
        ('"ckpt.pt")\n        dist', 'f"ckpt{rank}.pt")\n        dist'),
        ("            torch.save(model.module.state_dict(), \"ckpt.pt\")\n",
         "            torch.save(model.module.state_dict(), \"ckpt.pt\")\n            dist.barrier()\n"),
        ("if rank == 0:", "if epoch == 0:"),
    ],
    "module-dropped": [("model = DDP(torch.nn.Linear(4, 4).cuda(), device_ids=[local_rank])",
                        "model = torch.nn.Linear(4, 4).cuda()")],
    "map_location-removed": [("    if os.path.exists(\"ckpt.pt\"):", "    if os.path.exists(\"ckpt.pt\") and rank == 0:")],
    "sampler-to-shuffle": [("loader", "val_loader"),
                           ("sampler = DistributedSampler(data, rank=rank)", "sampler = RandomSampler(data)")],
    "collective-under-rank0": [("        dist.barrier()\n", "        if rank > 0:\n            dist.barrier()\n")],
    "global-rank-as-device": [("    rank = dist.get_rank()\n", "    rank = 0\n")],
    "local-rank-as-sampler-rank": [("    local_rank = int(os.environ[\"LOCAL_RANK\"])\n",
                                    "    local_rank = rank % torch.cuda.device_count()\n")],
}


@pytest.mark.parametrize("operator,edit", [(op, e) for op, edits in NEAR_MISSES.items() for e in edits])
def test_each_operator_skips_its_near_misses(operator, edit):
    old, new = edit
    assert old in CLEAN
    assert _sites(CLEAN.replace(old, new), operator) == []


def test_a_rank_zero_conjunct_is_dropped_and_the_rest_kept():
    source = CLEAN.replace("if rank == 0:", "if rank == 0 and epoch % 2 == 0:")
    [mutant] = _sites(source, "rank0-guard-removed")
    assert _changed(source, mutant.code) == ["-        if rank == 0 and epoch % 2 == 0:", "+        if epoch % 2 == 0:"]


def test_the_collective_goes_under_the_nearest_rank_zero_test_or_a_new_one():
    [mutant] = _sites(CLEAN.replace("if rank == 0:", "if dist.get_rank() == 0 and epoch > 1:"), "collective-under-rank0")
    assert "        if dist.get_rank() == 0:\n            dist.barrier()\n" in mutant.code
    [mutant] = _sites(CLEAN.replace("if rank == 0:", "if epoch > 1:"), "collective-under-rank0")
    assert "        if dist.get_rank() == 0:\n            dist.barrier()\n" in mutant.code


def test_killed_needs_a_new_finding_of_the_rule_near_the_edit():
    [mutant] = _sites(CLEAN, "map_location-removed")
    op = next(o for o in check_mutants.OPERATORS if o.name == "map_location-removed")
    assert check_mutants.killed(op, CLEAN, mutant, [], [("DDP014", 15)])
    assert not check_mutants.killed(op, CLEAN, mutant, [], [("DDP006", 15)])  # another rule
    assert not check_mutants.killed(op, CLEAN, mutant, [], [("DDP014", 25)])  # far from the edit
    assert not check_mutants.killed(op, CLEAN, mutant, [("DDP014", 15)], [("DDP014", 15)])  # the original has it
    [mutant] = _sites(CLEAN, "set_epoch-deleted")  # DDP002 names the sampler, lines above the edit
    op = next(o for o in check_mutants.OPERATORS if o.name == "set_epoch-deleted")
    assert check_mutants.killed(op, CLEAN, mutant, [], [("DDP002", 18)])


def test_the_tool_counts_killed_and_survived_in_real_trees(tmp_path):
    """Two trees: the clean trainer, each of whose eight mutants check finds, and the same trainer
    with `# noqa: DDP014` on its load: the map_location mutant survives (the comment silences its
    finding) and is listed with its file and line. A row that claims a bug is no base."""
    trees, work = tmp_path / "trees", tmp_path / "work"
    (trees / "one").mkdir(parents=True)
    (trees / "one" / "train.py").write_text(CLEAN)
    (trees / "two" / "src").mkdir(parents=True)
    (trees / "two" / "src" / "train.py").write_text(CLEAN.replace('{local_rank}")\n', '{local_rank}")  # noqa: DDP014\n'))
    rows = [{"repo": "owner/one", "commit": "0" * 40, "path": "train.py", "key": "one", "kind": "clean",
             "expected": [], "half": "tuning"},
            {"repo": "owner/two", "commit": "1" * 40, "path": "src/train.py", "key": "two", "kind": "clean",
             "expected": [], "half": "tuning"},
            {"repo": "owner/three", "commit": "2" * 40, "path": "train.py", "key": "one", "kind": "buggy",
             "expected": [{"code": "DDP006", "lines": [1]}], "half": "tuning"}]
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = subprocess.run([sys.executable, str(REPO / "bench" / "check_mutants.py"), str(manifest), str(trees),
                          "--half", "tuning", "--work", str(work)], capture_output=True, text=True, check=True)
    out = run.stdout.splitlines()
    assert (trees / "two" / "src" / "train.py").read_text().startswith("import os")  # the trees are left alone
    assert any(line.startswith("owner/two@1111111:src/train.py:") and "map_location-removed survived" in line
               for line in out), run.stdout
    assert out[-1] == "tuning: 2 files; killed 15/16 mutants (94 %)", run.stdout


def test_no_seed_in_a_function_nothing_calls():
    """`main()` named nowhere (its call commented out) runs no seeded bug: every operator skips it;
    named in another file of the project, it runs."""
    source = CLEAN.replace("    main()\n", "    # main()\n    pass\n")
    assert list(check_mutants.mutants(source)) == []
    assert len(list(check_mutants.mutants(source, elsewhere="from train import main\nmain()\n"))) == len(SEEDED)


def test_no_module_dropped_where_the_project_takes_the_prefix_off():
    assert _sites(CLEAN, "module-dropped")
    loader = 'state = {k.replace("module.", ""): v for k, v in torch.load(p).items()}\n'
    assert list(check_mutants.mutants(CLEAN, loader, check_mutants.OPERATORS[2:3])) == []
    assert _sites(CLEAN.replace("import os\n", "import os\nhasattr(os, 'module')\n"), "module-dropped")


def test_no_module_dropped_where_the_name_is_wrapped_in_another_function():
    """`model = DDP(model)` inside `train_model(model)`: the caller's `model` stays the bare model
    (its `hasattr(model, "module")` branch never runs)."""
    source = CLEAN.replace("    model = DDP(torch.nn.Linear(4, 4).cuda(), device_ids=[local_rank])\n",
                           "    model = wrap(torch.nn.Linear(4, 4).cuda())\n") + \
        "\n\ndef wrap(model):\n    model = DDP(model)\n    return model\n"
    assert _sites(source, "module-dropped") == []


def test_no_seed_after_a_raise_or_a_return_of_its_block():
    source = CLEAN.replace('        state = torch.load(', '        raise SystemExit("no resume")\n        state = torch.load(')
    assert _sites(source, "map_location-removed") == []


def test_no_guard_removed_where_the_save_sits_under_another_test_inside_it():
    source = CLEAN.replace('            torch.save(', '            if epoch > 1:\n                torch.save(')
    assert _sites(source, "rank0-guard-removed") == []


def test_no_seed_under_a_flag_only_ever_false():
    source = CLEAN.replace('    if os.path.exists("ckpt.pt"):', '    resume = False\n    if resume:')
    assert _sites(source, "map_location-removed") == []
    assert _sites(source.replace("resume = False", "resume = os.path.exists('ckpt.pt')"), "map_location-removed")


def test_no_seed_in_a_loader_only_evaluation_reads():
    """`evaluate(model, loader)` is the loader's only reader: its order and its shards change no
    training (the sampler keeps its set_epoch out of the training's concern)."""
    source = CLEAN.replace("        for (x,) in loader:\n", "        evaluate(model, loader)\n        for (x,) in data:\n")
    assert _sites(source, "set_epoch-deleted") == []
    assert _sites(source, "sampler-to-shuffle") == []


def test_no_guard_removed_in_a_helper_called_on_rank_zero_only():
    source = CLEAN.replace('            torch.save(model.module.state_dict(), "ckpt.pt")\n',
                           '            save(model)\n') + \
        '\n\ndef save(model):\n    if dist.get_rank() == 0:\n        torch.save(model.module.state_dict(), "ckpt.pt")\n'
    assert [m.line for m in _sites(source, "rank0-guard-removed")] == []
    assert _sites(source.replace("        if rank == 0:\n            save(model)", "        save(model)"),
                  "rank0-guard-removed")


def test_no_local_rank_taken_from_a_dict_of_the_environment():
    source = CLEAN.replace('    local_rank = int(os.environ["LOCAL_RANK"])\n',
                           '    env = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK")}\n    local_rank = 0\n')
    assert _sites(source, "local-rank-as-sampler-rank") == []
    assert _sites(CLEAN.replace('int(os.environ["LOCAL_RANK"])', 'int(os.getenv("LOCAL_RANK", "0"))'),
                  "local-rank-as-sampler-rank")
