"""The self-check under real two-process launches (torchrun, CPU, gloo).

Every check has a trigger (the converted program of ``tests/support/self_check_programs.py``
with exactly one gap) and a near miss (a correct program of the same shape): the trigger's
finding names the gap's line and its check, once, from the main process, in the block and in
the JSON file; the near miss prints nothing. Three launches hold everything (``import torch``
costs seconds): the checks on by default (one program under ``DDPIFY_VERIFY=strict``, and last
the ``at-exit`` program under strict, whose exit checks at the real exit fail the launch), the
same programs with ``DDPIFY_VERIFY=0`` (the correct program's output then is exactly the same;
last ``at-exit`` with the checks on, not strict: the launch succeeds), and a hang.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.support import self_check_programs as programs
from tests.support.env import REPO

from . import helpers as h

pytestmark = pytest.mark.slow

JOB = REPO / "tests" / "support" / "self_check_job.py"
HEADER = "ddpify self-check: 1 problem(s) found"
# the trigger that would hang with the checks off (its finding says so) runs under strict only
HANGS_WITHOUT_CHECKS = "uneven-batches"


def launch(tmp_path, names, status=0, **environ):
    """Run ``names`` in one job (the last one's exit checks are the real exit's); the launch
    must end with ``status``."""
    for name in names:
        (tmp_path / f"{name.partition(':')[0]}.py").write_text(programs.program(name.partition(":")[0]))
    out = tmp_path / "out"
    out.mkdir()
    done = h.run(h.torchrun(JOB, str(out), *names), tmp_path, h.env(**environ))
    assert done.returncode == status, str(done)
    results = {}
    for name in names:
        name = name.partition(":")[0]
        results[name] = [json.loads((out / f"{name}.rank{r}.json").read_text()) for r in (0, 1)]
        json_file = out / f"{name}.json"
        results[name].append(json.loads(json_file.read_text()) if json_file.exists() else None)
    return done, results


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """Every program with the checks on (the default with two processes); last, both checks at
    exit under strict, at the real exit: the launch fails."""
    names = [name for name in programs.NAMES if name != HANGS_WITHOUT_CHECKS]
    return launch(tmp_path_factory.mktemp("checked"), [*names, f"{HANGS_WITHOUT_CHECKS}:strict", "at-exit:strict"],
                  status=1)


@pytest.fixture(scope="module")
def unchecked(tmp_path_factory):
    """The correct program and the triggers under DDPIFY_VERIFY=0; last, both checks at exit with
    the checks on (not strict), at the real exit: the launch succeeds."""
    names = ["correct", *(name for name in programs.CASES if name != HANGS_WITHOUT_CHECKS), "at-exit:1"]
    return launch(tmp_path_factory.mktemp("unchecked"), names, DDPIFY_VERIFY="0")


@pytest.mark.parametrize("name", [name for name in programs.CASES if name != HANGS_WITHOUT_CHECKS])
def test_a_trigger_is_one_finding_at_its_gap_from_the_main_process(checked, name):
    _, results = checked
    rank0, rank1, written = results[name]
    block = [line for line in rank0["stderr"].splitlines() if line.startswith(("ddpify self-check:", f"{name}.py:"))]
    line = programs.gap_line(name)
    check = programs.CHECK[name]
    assert block[0] == HEADER and len(block) == 2, rank0["stderr"]
    assert block[1].startswith(f"{name}.py:{line}: {check}: ")
    assert "DDPIFY_VERIFY=0" in block[1] and "docs/runtime.md" in block[1]
    assert re.search(r"\(rewrite [a-z-]+\)|a manual change: ", block[1])
    assert "ddpify self-check" not in rank1["stderr"]  # one block, from the main process
    assert [(f["check"], f["file"], f["line"]) for f in written] == [(check, f"{name}.py", line)]
    assert rank0["error"] is None and rank1["error"] is None


@pytest.mark.parametrize("name", ["correct", *(f"{name}-near" for name in programs.CASES)])
def test_a_correct_program_prints_no_finding(checked, name):
    _, results = checked
    rank0, rank1, written = results[name]
    assert "self-check" not in rank0["stderr"] + rank1["stderr"], rank0["stderr"]
    assert written is None
    assert re.search(r"^epoch 1: loss \d", rank0["stdout"], re.M)


def test_strict_raises_on_every_process_after_the_one_block(checked):
    _, results = checked
    rank0, rank1, written = results[HANGS_WITHOUT_CHECKS]
    line = programs.gap_line(HANGS_WITHOUT_CHECKS)
    for rank in (rank0, rank1):
        assert rank["error"]["class"] == "SelfCheckError"
        assert [(f["check"], f["line"]) for f in rank["error"]["findings"]] == [("uneven-batches", line)]
    assert rank0["stderr"].startswith(f"{HEADER}\n{HANGS_WITHOUT_CHECKS}.py:{line}: uneven-batches: ")
    assert "3, 2 batches per pass" in rank0["stderr"]
    assert "self-check" not in rank1["stderr"]
    assert written == rank0["error"]["findings"]


def exit_block(done):
    """The block the real exit printed (both exit checks of the at-exit program), from the launch's output."""
    lines = done.output.splitlines()
    start = lines.index("ddpify self-check: 2 problem(s) found")
    return lines[start:start + 3]


def at_exit_lines():
    source = programs.program("at-exit").splitlines()
    return [next(n for n, line in enumerate(source, 1) if line.startswith(start))
            for start in ("model = DistributedDataParallel(", "torch.save(")]


def test_under_strict_a_finding_at_the_real_exit_fails_the_launch(checked):
    """An exception in an exit hook does not change the exit status: the exit checks printed
    their block and the job succeeded. Now every process that knows the findings exits with
    status 1 (the launch fails: `checked`), after the one block from the main process."""
    done, results = checked
    wrap, write = at_exit_lines()
    block = exit_block(done)
    assert block[1].startswith(f"at-exit.py:{wrap}: diverged-at-exit: "), done.output
    assert block[2].startswith(f"at-exit.py:{write}: shared-write: every process wrote out.pt"), done.output
    assert done.output.splitlines().count("ddpify self-check: 2 problem(s) found") == 1  # one block
    # torchrun's summary names each process and the findings (from its error file)
    assert done.output.count("SelfCheckError: ddpify self-check: 2 problem(s) found") == 2
    assert [(f["check"], f["line"]) for f in results["at-exit"][2]] == [("diverged-at-exit", wrap), ("shared-write", write)]


def test_not_strict_a_finding_at_the_real_exit_keeps_the_exit_status(unchecked):
    done, results = unchecked  # the launch succeeded (`unchecked`)
    wrap, write = at_exit_lines()
    block = exit_block(done)
    assert block[1].startswith(f"at-exit.py:{wrap}: diverged-at-exit: ") and block[2].startswith(f"at-exit.py:{write}: shared-write: ")
    assert "SelfCheckError" not in done.output


def test_off_prints_nothing_and_a_correct_program_prints_exactly_what_it_prints_unchecked(checked, unchecked):
    _, on = checked
    _, off = unchecked
    for name in [name for name in off if name != "at-exit"]:
        rank0, rank1, written = off[name]
        assert "self-check" not in rank0["stderr"] + rank1["stderr"] and written is None, name
    for rank in (0, 1):
        assert on["correct"][rank]["stdout"] == off["correct"][rank]["stdout"]
        assert on["correct"][rank]["stderr"] == off["correct"][rank]["stderr"]
    assert "epoch 1: loss" in on["correct"][0]["stdout"]


HANG = """\
import time
from ddpify_runtime import barrier, get_rank, init_distributed_mode

init_distributed_mode()
if get_rank() == 1:
    time.sleep(60)  # rank 1 is here
barrier()  # rank 0 waits here
"""


def test_a_hang_names_where_each_process_is(tmp_path):
    script = tmp_path / "hang.py"
    script.write_text(HANG)
    done = h.run(h.torchrun(script), tmp_path, h.env(DDPIFY_TIMEOUT="8"), timeout=60)
    assert done.returncode not in (0, None), str(done)
    lines = [line for line in done.output.splitlines() if line.startswith("ddpify hang:")]
    assert any(re.match(r"ddpify hang: rank 0 waits in barrier\(\) at hang\.py:7 \(\d+ s\)$", line) for line in lines), done
    assert "ddpify hang: rank 1 is at hang.py:6" in lines, done
    assert "ddpify hang: rank 1   hang.py:6 in <module>" in lines
    assert "ddpify hang: rank 0   hang.py:7 in <module>" in lines


# hangs the watchdog can prove, named long before the timeout (decision 0251): round 29's DCGAN waited
# 600 s in silence, its main process in a barrier() of a logger's constructor that only it ran, the other
# in DistributedDataParallel's first broadcast
MISMATCH = """\
import torch
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import barrier, get_rank, init_distributed_mode

init_distributed_mode()
if get_rank() == 0:
    barrier()  # rank 0 waits here
model = DistributedDataParallel(torch.nn.Linear(2, 1))  # rank 1 waits here
"""
LEFT = """\
import threading
import time
from ddpify_runtime import barrier, get_rank, init_distributed_mode

init_distributed_mode()
if get_rank() == 1:
    threading.Thread(target=time.sleep, args=(40,)).start()  # keeps rank 1's process after its program
else:
    barrier()  # rank 0 waits here
"""
DOWNLOAD_FIRST = """\
import time
from ddpify_runtime import get_rank, init_distributed_mode, main_process_first

init_distributed_mode()
with main_process_first():  # rank 1 waits here while rank 0 downloads
    if get_rank() == 0:
        time.sleep(14)
print("done")
"""
EARLY_TIMEOUT = "24"  # the watchdog's early proof after 6 s (a quarter), its report near the timeout after 21.6 s


BARRIER, WRAP = r"barrier\(\) at job\.py:7", r"DistributedDataParallel\(\.\.\.\) at job\.py:8"


@pytest.mark.parametrize("source, proof", [
    (MISMATCH, rf"ddpify hang: rank (1 waits in {WRAP}|0 waits in {BARRIER}) \((?P<s>\d+) s\), and every other process "
               rf"waits in another collective \(rank (0 in {BARRIER}|1 in {WRAP})\)"),  # (whichever proves it first)
    (LEFT, r"ddpify hang: rank 0 waits in barrier\(\) at job\.py:9 \((?P<s>\d+) s\), and rank 1 has left the program"),
])
def test_a_hang_the_watchdog_can_prove_is_named_long_before_the_timeout(tmp_path, source, proof):
    """A process that waits in a collective while every other one waits in another (a barrier only the
    main process runs, the others in DDP's first broadcast), or while another has left the program (its
    main thread ended; a thread of its own keeps the process), is named after a quarter of the timeout,
    with the reason; every process then prints where it is. Before, only near the timeout (after 600 s,
    where a job runs out of its own time first: nothing printed)."""
    script = tmp_path / "job.py"
    script.write_text(source)
    done = h.run(h.torchrun(script), tmp_path, h.env(DDPIFY_TIMEOUT=EARLY_TIMEOUT), timeout=90)
    assert done.returncode not in (0, None), str(done)
    found = re.search(proof, done.output)
    assert found is not None and int(found.group("s")) < 15, str(done)
    assert done.output.count("ddpify hang: rank 0   job.py:") == 1, str(done)


def test_a_long_wait_for_a_process_that_runs_the_programs_code_is_no_hang(tmp_path):
    """Near miss: the main process downloads (14 s, past the early proof's 6 s) while the other waits in
    main_process_first()'s barrier: the one that runs may still come, so nothing is named, and the job
    ends well."""
    script = tmp_path / "job.py"
    script.write_text(DOWNLOAD_FIRST)
    done = h.run(h.torchrun(script), tmp_path, h.env(DDPIFY_TIMEOUT=EARLY_TIMEOUT), timeout=90)
    assert done.returncode == 0 and "ddpify hang" not in done.output, str(done)


# dcase_ust's AudioDataset (the twelfth sweep, part C): `self.filenames = list(set(...))` listed the
# file names in another order on each process (str hashes are salted per process), so the
# DistributedSampler's disjoint indices named overlapping files, and no check saw it
ORDERED_FROM_A_SET = """\
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from ddpify_runtime import device_ids, end_epoch, init_distributed_mode, set_epoch


class Files(Dataset):
    def __init__(self, names):
        self.names = {listed}

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        return torch.tensor([float(len(self.names[i]))]), torch.tensor([1.0])


init_distributed_mode()
train_set = Files(["clip_%d.wav" % i for i in range(32)])
train_loader = DataLoader(train_set, batch_size=4, sampler=DistributedSampler(train_set, shuffle=True))
model = torch.nn.Linear(1, 1)
model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    set_epoch(train_loader, epoch)
    for x, y in train_loader:
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    end_epoch()
"""


def test_a_data_set_listed_from_a_set_of_strings_is_a_finding_at_exit_and_a_sorted_one_none(tmp_path):
    scripts = []
    for name, listed in (("from_set", "list(set(names))"), ("from_sorted", "sorted(set(names))")):
        (tmp_path / f"{name}.py").write_text(ORDERED_FROM_A_SET.format(listed=listed))
        scripts.append(h.torchrun(tmp_path / f"{name}.py"))
    salted = h.env(PYTHONHASHSEED="random")  # as a launch outside the tests: each process salts its own
    trigger, near = h.run_all(scripts, tmp_path, [salted, salted])
    assert trigger.returncode == 0 and near.returncode == 0, (trigger, near)
    line = next(n for n, text in enumerate(ORDERED_FROM_A_SET.splitlines(), 1) if text.startswith("train_loader ="))
    assert f"from_set.py:{line}: data-order: this training loader's data set holds names differently on each " \
           "process" in trigger.output, trigger.output
    assert "self-check" not in near.output, near.output


# DCWP's pruning solver (round 31's tuning half of 31a): `train_ERM` saves the pretrained checkpoint
# on the main process only, inside the `except` of a `try` that loads it, so no barrier follows the
# save; rank 1 loaded it at once and stopped with FileNotFoundError, and nothing named the read
READ_BEFORE_WRITTEN = """\
import os
import time
import torch
from ddpify_runtime import barrier, init_distributed_mode, is_main_process

init_distributed_mode()
path = {path!r}
barrier()
if is_main_process():
    time.sleep(2)  # the main process is slower to its save
    torch.save({{"w": 1}}, {ckpt!r})
state = torch.load(path)
"""


def test_a_read_of_a_file_the_main_process_writes_later_is_named_on_the_reading_process(tmp_path):
    """Trigger: rank 1 reads ckpt.pt before the main process has saved it: its FileNotFoundError ends
    it, and the finding names the read's line and the save's. Near miss: a file made before the run
    (`data.pt`) reads well on every process, the main process's save of ckpt.pt aside: nothing said."""
    torch = pytest.importorskip("torch")
    scripts = []
    for name, path in (("early", "ckpt.pt"), ("before", "data.pt")):
        folder = tmp_path / name
        folder.mkdir()
        torch.save({"w": 0}, folder / "data.pt")
        (folder / "job.py").write_text(READ_BEFORE_WRITTEN.format(path=str(folder / path), ckpt=str(folder / "ckpt.pt")))
        scripts.append(h.torchrun(folder / "job.py"))
    early, before = h.run_all(scripts, tmp_path, [h.env(), h.env()], timeout=120)
    line = next(n for n, text in enumerate(READ_BEFORE_WRITTEN.splitlines(), 1) if text.startswith("state ="))
    saved = next(n for n, text in enumerate(READ_BEFORE_WRITTEN.splitlines(), 1) if "torch.save" in text)
    assert early.returncode != 0 and "FileNotFoundError" in early.output, str(early)
    assert f"early/job.py:{line}: early-read: rank 1 read ckpt.pt before the main process had written it: the " \
           f"main process writes it in this run (early/job.py:{saved})" in early.output, early.output
    assert before.returncode == 0 and "self-check" not in before.output, str(before)
