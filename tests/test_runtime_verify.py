"""The runtime's self-check in one process: its setting, what it takes a loader and a parameter
to be, how a finding reads, and that its hooks go when the checks are done. The checks against
real two-process runs (a trigger and a near miss each) are in tests/distributed/test_self_check.py.
"""

import builtins
import io
import json
import logging
import socket
import sys
import textwrap

import pytest
import torch
from torch.utils.data import (BatchSampler, DataLoader, DistributedSampler, IterableDataset, Subset,
                              TensorDataset, WeightedRandomSampler)
from torch.utils.data.dataloader import _BaseDataLoaderIter

import ddpify_runtime as rt

DATA = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
INIT, ITER, NEXT, BACKWARD = DataLoader.__init__, DataLoader.__iter__, _BaseDataLoaderIter.__next__, torch.autograd.backward
DDP_FORWARD = torch.nn.parallel.DistributedDataParallel.forward
OPTIMIZER_INIT = torch.optim.Optimizer.__init__
OPEN = builtins.open
SAVE = torch.save  # as a program's `from torch import save` binds it, before the checks
ZIP_WRITER, SCRIPT_SAVE = torch.serialization._open_zipfile_writer, torch.jit.RecursiveScriptModule.save
OBJECT_SAVE = torch.serialization._save
HOST = socket.gethostname()


# --------------------------------------------------------------------------- the setting

@pytest.mark.parametrize("value, world, mode", [
    (None, 1, "off"), (None, 2, "warn"), ("0", 2, "off"), ("1", 1, "warn"), ("1", 2, "warn"),
    ("strict", 1, "strict"), (" Strict ", 4, "strict"), ("", 2, "warn"),
])
def test_on_by_default_with_more_than_one_process(value, world, mode):
    environ = {} if value is None else {"DDPIFY_VERIFY": value}
    assert rt._verify_mode(environ, world) == mode


def test_an_unknown_setting_is_one_clear_error():
    with pytest.raises(ValueError, match=r"^ddpify: DDPIFY_VERIFY='yes' is not 0, 1 or strict$"):
        rt._verify_mode({"DDPIFY_VERIFY": "yes"}, 2)


# --------------------------------------------------------------------------- loaders and parameters

class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(4))


class Custom(torch.utils.data.Sampler):
    def __iter__(self):
        return iter(range(32))

    def __len__(self):
        return 32


class Batches(torch.utils.data.Sampler):
    """A custom batch sampler around another, holding it under a name of its own."""

    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        return iter(self.batches)


@pytest.mark.parametrize("loader, sharded", [
    (DataLoader(DATA, batch_size=8, shuffle=True), False),
    (DataLoader(DATA, batch_size=8), False),
    (DataLoader(DATA, sampler=WeightedRandomSampler([1.0] * 32, 32)), False),
    (DataLoader(DATA, sampler=DistributedSampler(DATA, num_replicas=2, rank=0)), True),
    (DataLoader(DATA, batch_sampler=BatchSampler(DistributedSampler(DATA, num_replicas=2, rank=1), 4, False)), True),
    (DataLoader(DATA, sampler=rt.ShardedSampler(range(32), num_replicas=2, rank=0)), True),
    (rt.shard_loader(DataLoader(DATA, batch_size=8, shuffle=True)), True),
    (DataLoader(DATA, batch_sampler=Batches(BatchSampler(DistributedSampler(DATA, num_replicas=2, rank=1), 4, False))), True),
    (DataLoader(DATA, batch_sampler=Batches(Batches(BatchSampler(DistributedSampler(DATA, 2, 0), 4, False)))), True),
    (DataLoader(DATA, batch_sampler=Batches(BatchSampler(WeightedRandomSampler([1.0] * 32, 32), 4, False))), None),
    (DataLoader(Stream()), None),
    (DataLoader(DATA, sampler=Custom()), None),
])
def test_which_loaders_are_sharded(loader, sharded):
    assert rt._sharded(loader) is sharded


def test_the_order_of_a_pass_is_its_samplers_seed_and_epoch_where_it_shuffles():
    shuffled = DistributedSampler(DATA, num_replicas=2, rank=0, shuffle=True, seed=3)
    loader = DataLoader(DATA, sampler=shuffled)
    assert rt._order(loader) == (3, 0)
    shuffled.set_epoch(1)
    assert rt._order(loader) == (3, 1)
    ordered = DataLoader(DATA, sampler=DistributedSampler(DATA, num_replicas=2, rank=0, shuffle=False))
    assert rt._order(ordered) is None  # the same order every pass is meant
    random_inner = DataLoader(DATA, sampler=rt.ShardedSampler(WeightedRandomSampler([1.0] * 32, 32), 2, 0))
    assert rt._order(random_inner) == (0, 0)
    assert rt._order(DataLoader(DATA, sampler=rt.ShardedSampler(range(32), 2, 0))) is None


def test_a_hand_made_shard_is_told_apart_by_its_indices():
    halves = [DataLoader(Subset(DATA, range(16 * r, 16 * r + 16))) for r in (0, 1)]
    assert rt._data_fingerprint(halves[0]) != rt._data_fingerprint(halves[1])
    whole = [DataLoader(DATA, shuffle=True), DataLoader(DATA)]
    assert rt._data_fingerprint(whole[0]) == rt._data_fingerprint(whole[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.bfloat16,
                                   torch.complex64, torch.int64])
def test_a_checksum_sees_one_bit(dtype):
    values = (torch.randn(5, 3) * 10).to(dtype)
    flipped = values.clone()
    flipped.view(-1).view(torch.uint8)[13] ^= 1  # one bit of one element
    assert not torch.equal(values, flipped)
    assert int(rt._checksum(values)) == int(rt._checksum(values.clone()))
    assert int(rt._checksum(values)) != int(rt._checksum(flipped))
    assert int(rt._checksum(values.t())) == int(rt._checksum(values.t().contiguous()))


def test_a_batch_fingerprint_is_its_values():
    batch = (torch.arange(6).reshape(2, 3), {"text": ["a", "b"], "weight": torch.ones(2)})
    same = (torch.arange(6).reshape(2, 3), {"text": ["a", "b"], "weight": torch.ones(2)})
    other = (torch.arange(6).reshape(2, 3), {"text": ["a", "c"], "weight": torch.ones(2)})
    assert rt._batch_fingerprint(batch) == rt._batch_fingerprint(same) != rt._batch_fingerprint(other)


# --------------------------------------------------------------------------- findings

def finding(**changes):
    fields = dict(check="same-order", file="train.py", line=42, message="what", fix="way out")
    return rt._Finding(**{**fields, **changes})


def test_a_finding_is_one_line_at_the_users_place_naming_the_way_out_the_setting_and_the_page():
    assert str(finding()) == ("train.py:42: same-order: what; way out; DDPIFY_VERIFY=0 turns the "
                              "self-check off (docs/runtime.md#self-check)")
    assert finding(agree="x").as_json() == {"check": "same-order", "file": "train.py", "line": 42,
                                            "message": "what", "fix": "way out"}


def test_findings_of_all_processes_merge_once_and_agreement_is_needed_where_asked():
    a, b = finding(), finding(line=7)
    same_data, other_data = finding(check="unsharded-loader", agree=1), finding(check="unsharded-loader", agree=2)
    assert rt._merge([[a, b], [b, a]]) == [a, b]
    assert rt._merge([[a], [], [b]]) == [a, b]  # a finding of one process only is reported too
    assert rt._merge([[same_data], [same_data]]) == [same_data]
    assert rt._merge([[same_data], [other_data]]) == []


# --------------------------------------------------------------------------- one process, the hooks

PROGRAM = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader, DistributedSampler
    loader = DataLoader(DATA, batch_size=8, sampler=DistributedSampler(DATA, num_replicas=1, rank=0))
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(PASSES):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            SEEN.append(rt._STATE.self_check is not None and bool(rt._STATE.self_check.step_undo))
""")


def run(check, passes, seen=None):
    """Run PROGRAM as train.py under ``check`` (installed as the runtime installs it)."""
    rt._STATE.self_check = check
    check.install()
    scope = {"DATA": DATA, "PASSES": passes, "SEEN": [] if seen is None else seen, "rt": rt}
    exec(compile(PROGRAM, "train.py", "exec"), scope)
    return scope


def line_of(text):
    return next(n for n, line in enumerate(PROGRAM.splitlines(), 1) if line.lstrip().startswith(text))


@pytest.fixture
def check(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DDPIFY_VERIFY_JSON", str(tmp_path / "findings.json"))
    optimizer_init = torch.optim.Optimizer.__init__
    made = []
    yield lambda strict=False: made.append(rt._SelfCheck(strict)) or made[-1]
    for check in made:
        check.remove()
    rt._STATE.self_check = None
    assert (DataLoader.__init__, DataLoader.__iter__, _BaseDataLoaderIter.__next__,
            torch.optim.Optimizer.__init__, torch.autograd.backward) == (INIT, ITER, NEXT, optimizer_init, BACKWARD)
    assert builtins.open is io.open is OPEN and torch.nn.parallel.DistributedDataParallel.forward is DDP_FORWARD
    assert (torch.serialization._open_zipfile_writer, torch.jit.RecursiveScriptModule.save) == (ZIP_WRITER, SCRIPT_SAVE)
    assert torch.serialization._save is OBJECT_SAVE
    assert torch.distributed.destroy_process_group.__code__.co_filename != rt.__file__  # no wrapper of the checks left


def test_findings_print_as_one_block_with_a_header_and_go_to_the_json_file(check, capsys, tmp_path):
    run(check(), passes=2)
    err = capsys.readouterr().err.splitlines()
    unwrapped = f"train.py:{line_of('optimizer = ')}: unwrapped-parameters: this optimizer steps 2 parameter(s) of Linear"
    same_order = f"train.py:{line_of('loader = ')}: same-order: "
    assert err[0] == "ddpify self-check: 1 problem(s) found"
    assert err[1].startswith(unwrapped) and "(weight, bias)" in err[1]
    assert "; put the Linear in DDP before this optimizer is built: model = DistributedDataParallel(" in err[1]
    assert err[2] == "ddpify self-check: 1 problem(s) found"  # the second pass: a block of its own
    assert err[3].startswith(same_order)
    assert len(err) == 4
    written = json.loads((tmp_path / "findings.json").read_text())
    assert [(f["check"], f["file"], f["line"]) for f in written] == [
        ("unwrapped-parameters", "train.py", line_of("optimizer = ")), ("same-order", "train.py", line_of("loader = "))]


def test_the_hooks_go_after_the_second_step_and_the_second_pass(check, capsys):
    seen = []
    scope = run(check(), passes=1, seen=seen)
    assert seen == [True, False, False, False]  # the per-step hooks go at the 2nd step
    module = rt._optimizer_module()
    assert not module._global_optimizer_pre_hooks and not module._global_optimizer_post_hooks
    assert torch.autograd.backward is BACKWARD and _BaseDataLoaderIter.__next__ is NEXT
    assert DataLoader.__iter__ is not ITER, "the per-pass hook waits for the loader's 2nd pass"
    for _ in DataLoader(DATA):  # another loader's pass changes nothing
        pass
    assert DataLoader.__iter__ is not ITER
    train(scope)  # the training loader's 2nd training pass (same order: a finding)
    assert DataLoader.__iter__ is ITER and "same-order" in capsys.readouterr().err
    assert not module._global_optimizer_post_hooks
    # dormant: only the constructors stay hooked (an optimizer built later arms the checks again)
    assert rt._STATE.self_check is scope["rt"]._STATE.self_check is not None
    assert DataLoader.__init__ is not INIT and torch.optim.Optimizer.__init__ is not OPTIMIZER_INIT


def train(scope):
    """One training pass of PROGRAM's loader, model and optimizer."""
    for x, y in scope["loader"]:
        scope["optimizer"].zero_grad()
        torch.nn.functional.mse_loss(scope["model"](x), y).backward()
        scope["optimizer"].step()


@pytest.mark.parametrize("grad", [False, True])
def test_an_evaluation_over_the_training_loader_in_its_epoch_is_no_second_training_pass(check, capsys, grad):
    """TRADES's eval_train(model, train_loader) after each epoch's training: the same order (no
    set_epoch between), no step between its batches; the next epoch's training pass reshuffles."""
    scope = run(check(), passes=1)
    capsys.readouterr()
    for _ in range(2):
        with torch.set_grad_enabled(grad):  # with or without torch.no_grad(): no step is what counts
            for x, _y in scope["loader"]:
                scope["model"](x)
        assert DataLoader.__iter__ is not ITER, "the next training pass is still to be compared"
    scope["loader"].sampler.set_epoch(1)
    train(scope)
    assert "same-order" not in capsys.readouterr().err
    assert DataLoader.__iter__ is ITER and not rt._optimizer_module()._global_optimizer_post_hooks


def test_a_training_pass_after_an_evaluation_in_the_same_order_is_a_finding(check, capsys):
    """The same program without set_epoch: the evaluation pass is no finding, the next training
    pass in the first one's order is, at its 2nd step, at the loader's line."""
    scope = run(check(), passes=1)
    capsys.readouterr()
    for x, _y in scope["loader"]:
        scope["model"](x)
    assert "same-order" not in capsys.readouterr().err
    train(scope)
    assert f"train.py:{line_of('loader = ')}: same-order: " in capsys.readouterr().err
    assert DataLoader.__iter__ is ITER and not rt._optimizer_module()._global_optimizer_post_hooks


AUTOENCODER = textwrap.dedent("""\
    import torch
    from torch.nn.parallel import DistributedDataParallel
    class AE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = torch.nn.Linear(4, 2)
            self.decoder = torch.nn.Linear(2, 4)
        def forward(self, x, decode=False):
            z = self.encoder(x)
            return self.decoder(z) if decode else z
    model = DistributedDataParallel(AE(), find_unused_parameters=UNUSED)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in torch.randn(2, 8, 4):
        optimizer.zero_grad()
        (LOSS).backward()
        optimizer.step()
""")


@pytest.fixture
def group():
    """A process group of one process (gloo, in this process): DistributedDataParallel needs one."""
    torch.distributed.init_process_group("gloo", store=torch.distributed.HashStore(), rank=0, world_size=1)
    yield
    torch.distributed.destroy_process_group()


def run_autoencoder(check, loss, unused=True):
    rt._STATE.self_check = check
    check.install()
    code = AUTOENCODER.replace("UNUSED", str(unused)).replace("LOSS", loss)
    exec(compile(code, "train.py", "exec"), {})


@pytest.mark.parametrize("loss, how", [
    ("((model.module.decoder(model(x)) - x) ** 2).mean()", "one forward"),  # a sub-module called beside the forward
    ("(model(x, decode=True) - x).pow(2).mean() + model(x).sum()", "2 forwards before this backward"),  # the last forward leaves the decoder unused
])
def test_parameters_a_backward_reaches_outside_the_last_forward_are_named_before_ddp_stops(group, check, capsys, loss, how):
    """find_unused_parameters=True (the decoder is unused on some forwards): DDP takes what the
    last forward did not use for unused, and stops when the backward reaches it."""
    with pytest.raises(RuntimeError, match="marked as ready twice"):
        run_autoencoder(check(), loss)
    err = capsys.readouterr().err
    line = next(n for n, text in enumerate(AUTOENCODER.splitlines(), 1) if text.startswith("model = "))
    assert f"train.py:{line}: outside-forward: this backward reaches 2 parameter(s) of AE (decoder.weight, decoder.bias)" in err
    assert f"({how}; find_unused_parameters=True)" in err and "sync_gradients(model)" in err


@pytest.mark.parametrize("loss, unused", [
    ("(model(x) - x[:, :2]).pow(2).mean() + model(x).sum()", True),  # two forwards that use the same parameters
    ("(model(x).sum() + model(x, decode=True).sum())", True),  # the last forward uses all the others did
    ("((model.module.decoder(model(x)) - x) ** 2).mean()", False),  # DDP expects every parameter: no stop
    ("(model(x, decode=True).sum() + torch.no_grad()(model)(x).sum() * 0)", True),  # a forward DDP does not search
])
def test_forwards_that_ddp_takes_rightly_are_no_finding(group, check, capsys, loss, unused):
    run_autoencoder(check(), loss, unused)
    assert "outside-forward" not in capsys.readouterr().err


KEPT_BARE = textwrap.dedent("""\
    import torch
    from torch.nn.parallel import DistributedDataParallel
    class Trainer:
        def __init__(self, model):
            self.model = model
        def step(self, x, optimizer):
            optimizer.zero_grad()
            self.model(x).pow(2).mean().backward()
            optimizer.step()
    model = torch.nn.Linear(4, 2)
    BEFORE
    model = DistributedDataParallel(model)
    AFTER
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in torch.randn(3, 8, 4):
        with torch.no_grad():
            model.module(x)
        trainer.step(x, optimizer)
""")


@pytest.mark.parametrize("before, after, bypassed", [
    ("trainer = Trainer(model)", "pass", True),  # the trainer keeps the bare model: DDP's forward never runs
    ("pass", "trainer = Trainer(model)", False),  # near miss: the trainer keeps the wrapper
])
def test_a_wrapper_whose_forward_never_runs_while_its_parameters_are_stepped_is_named(group, check, capsys,
                                                                                      before, after, bypassed):
    """Decision 0052's "not done": an object built before the wrap (`trainer = Trainer(model)`)
    trains the bare module; DDP averages nothing and the replicas diverge (said before as
    `diverged-parameters`, with a wrong cause). The wrap line is named with what happened; a
    forward of the bare module under no_grad (an evaluation) is no training forward either way."""
    rt._STATE.self_check = check()
    rt._STATE.self_check.install()
    code = KEPT_BARE.replace("BEFORE", before).replace("AFTER", after)
    exec(compile(code, "train.py", "exec"), {})
    err = capsys.readouterr().err
    line = next(n for n, text in enumerate(code.splitlines(), 1) if text.startswith("model = Distributed"))
    said = f"train.py:{line}: bypassed-wrapper: this optimizer steps 2 parameter(s) of Linear (weight, bias) " \
           "whose gradients came from the bare module"
    assert (said in err) is bypassed and ("bypassed-wrapper" in err) is bypassed
    assert "sync_gradients(model)" in err if bypassed else err == ""


HAND_AVERAGED = textwrap.dedent("""\
    import torch
    from torch.nn.parallel import DistributedDataParallel
    from ddpify_runtime import average_gradients
    model = torch.nn.Linear(4, 2)
    weights = list(model.parameters())
    model = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(weights, lr=0.1)
    for x in torch.randn(3, 8, 4):
        loss = torch.nn.functional.linear(x, *weights).pow(2).mean()
        for w, g in zip(weights, torch.autograd.grad(loss, weights)):
            w.grad = g
        AVERAGE
        optimizer.step()
""")


@pytest.mark.parametrize("average, bypassed", [
    ("average_gradients(optimizer)", False),  # the meta-gradients averaged by hand: DDP's forward need not run
    ("pass", True),  # near miss: set by hand and never averaged
])
def test_gradients_set_by_hand_and_averaged_are_no_bypassed_wrapper(group, check, capsys, average, bypassed):
    """MAML (Jayhwan/maml-pytorch-sine, decision 0176's held-out half, after the freeze): the meta-gradient
    of `torch.autograd.grad` is assigned to each weight's `.grad`, and the conversion averages it with
    `average_gradients(optimizer)` before the step; the wrapper's forward never runs (the model trains
    through a functional `parameterised()`). The self-check said `bypassed-wrapper` though the replicas
    stayed equal: gradients the runtime averaged are none of the bare module's."""
    rt._STATE.self_check = check()
    rt._STATE.self_check.install()
    exec(compile(HAND_AVERAGED.replace("AVERAGE", average), "train.py", "exec"), {})
    assert ("bypassed-wrapper" in capsys.readouterr().err) is bypassed


def test_reset_for_tests_takes_the_hooks_away_and_starts_afresh(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    rt._install_self_check("warn", 600.0)
    state = rt._STATE
    assert state.self_check is not None and state.installs >= 1 and DataLoader.__iter__ is not ITER
    rt._reset_for_tests()
    assert rt._STATE is state and vars(state) | {"eval_splits": None} == vars(rt._State()) | {"eval_splits": None}
    assert (DataLoader.__init__, DataLoader.__iter__, _BaseDataLoaderIter.__next__, torch.autograd.backward) == (
        INIT, ITER, NEXT, BACKWARD)


def test_strict_raises_the_block_and_removes_every_hook(check, capsys):
    with pytest.raises(rt.SelfCheckError) as raised:
        run(check(strict=True), passes=2)
    assert [f.check for f in raised.value.findings] == ["unwrapped-parameters"]
    assert str(raised.value).startswith("ddpify self-check: 1 problem(s) found\ntrain.py:")
    assert capsys.readouterr().err.rstrip("\n") == str(raised.value)
    assert rt._STATE.self_check is None


TWO_TRAININGS = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader, DistributedSampler
    loader = DataLoader(DATA, batch_size=8, sampler=DistributedSampler(DATA, num_replicas=1, rank=0))


    def train(model, optimizer):
        for epoch in range(2):
            loader.sampler.set_epoch(epoch)
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
                ARMED.append(bool(rt._STATE.self_check.step_undo))


    first = WRAP_FIRST(torch.nn.Linear(4, 1))
    train(first, torch.optim.SGD(first.parameters(), lr=0.1))
    second = WRAP_SECOND(torch.nn.Linear(4, 1))
    train(second, torch.optim.SGD(second.parameters(), lr=0.1))
""")


class Wrapper:
    """Stands for a DistributedDataParallel around ``module`` (one process has no process group)."""

    def __init__(self, module):
        self.module = module


def two_trainings(checking, wrap_second):
    """Run TWO_TRAININGS as train.py; the first model counts as wrapped, the second where asked."""
    rt._STATE.self_check = checking
    checking.install()
    wrappers = []

    def wrap(model):
        wrappers.append(Wrapper(model))
        checking.wrapped.add(wrappers[-1])
        return model

    scope = {"DATA": DATA, "ARMED": [], "rt": rt, "WRAP_FIRST": wrap,
             "WRAP_SECOND": wrap if wrap_second else (lambda model: model)}
    exec(compile(TWO_TRAININGS, "train.py", "exec"), scope)
    return scope


def test_a_second_training_is_checked_on_its_own_armed_by_its_optimizer(check, capsys, monkeypatch):
    """siamese_nb (second fresh sweep): five trainings one after another in one notebook, the
    checks watched the first only. An optimizer built after the checks ended arms them again:
    the second training's bare model is one finding at its optimizer's line, in a block of its
    own, and its exchange is named by that optimizer (every process builds it), not by how often
    a process armed; then the step hooks go again."""
    store = MirrorStore()
    monkeypatch.setattr(rt, "_default_store", lambda: store)
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    checking = check()
    scope = two_trainings(checking, wrap_second=False)
    assert scope["ARMED"] == [True, *[False] * 7, True, *[False] * 7]  # 8 steps each; armed again at the 2nd
    assert checking.armings == 2 and not checking.step_undo and not checking.pass_undo
    assert torch.autograd.backward is BACKWARD and _BaseDataLoaderIter.__next__ is NEXT
    assert DataLoader.__iter__ is ITER
    second = next(n for n, line in enumerate(TWO_TRAININGS.splitlines(), 1) if line.startswith("train(second"))
    first = second - 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and len(err) == 2
    assert err[1].startswith(f"train.py:{second}: unwrapped-parameters: this optimizer steps 2 parameter(s) of Linear")
    keys = sorted(key.rpartition("/")[0] for key in store.values if key.endswith("/0"))
    assert keys == [f"{checking.prefix}train.py:{first}#0", f"{checking.prefix}train.py:{second}#0"]


REBUILT = textwrap.dedent("""\
    import torch
    model = torch.nn.Linear(4, 1).requires_grad_(False)
    extra = torch.nn.Linear(4, 1)
    for round in range(4):
        optimizer = torch.optim.SGD(extra.parameters() if round == 3 else model.parameters(), lr=0.1)
        for step in range(3):
            optimizer.zero_grad()
            (model(torch.ones(2, 4)) + extra(torch.ones(2, 4))).sum().backward()
            optimizer.step()
            ARMED.append(bool(rt._STATE.self_check.step_undo))
""")


def test_an_optimizer_rebuilt_at_one_line_arms_the_checks_once_not_at_every_build(check, capsys):
    """An optimizer built anew at one line (each round of a loop: a learning rate set by
    rebuilding it, an inner optimisation per batch) would otherwise arm the checks, and exchange
    through the store, at every build; the trainings of one line run the same code. Here the
    4th round's optimizer steps a bare module: the line was checked at its first build, and
    that is not seen."""
    checking = check()
    rt._STATE.self_check = checking
    checking.install()
    scope = {"ARMED": [], "rt": rt}
    exec(compile(REBUILT, "train.py", "exec"), scope)
    assert scope["ARMED"] == [True, False, False, *[False] * 9]
    assert checking.armings == 1 and capsys.readouterr().err == ""


def test_a_second_training_of_a_wrapped_model_prints_nothing(check, capsys):
    checking = check()
    scope = two_trainings(checking, wrap_second=True)
    assert scope["ARMED"].count(True) == 2 and checking.armings == 2
    assert capsys.readouterr().err == ""


STARTS_OVER = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader, DistributedSampler
    def loader_of(data):
        return DataLoader(data, batch_size=8, sampler=DistributedSampler(data, num_replicas=1, rank=0))
    loader = loader_of(DATA)
    model = WRAP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


    def step(net, x, y):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        optimizer.step()
        ARMED.append(bool(rt._STATE.self_check.step_undo))


    def train(net, loader):
        validation = loader_of(DATA)
        for epoch in range(2):
            for each in (loader, validation):  # two loaders at one line, one epoch: no new training
                rt.set_epoch(each, epoch)
            for x, y in loader:
                step(net, x, y)


    train(model, loader)
    head = torch.nn.Linear(1, 1)  # fine-tuning: a bare head joins the same optimizer
    optimizer.add_param_group({"params": head.parameters()})
    SECOND
""")
SECOND = {
    "train() again": "train(lambda x: head(model(x)), loader)",
    "a new loader at the same line (a fold)": "train(lambda x: head(model(x)), loader_of(DATA))",
    "the same loader in a later loop": textwrap.dedent("""\
        for epoch in range(2):
            rt.set_epoch(loader, epoch)
            for x, y in loader:
                step(lambda x: head(model(x)), x, y)"""),
}


@pytest.mark.parametrize("second", SECOND)
def test_a_training_that_starts_over_is_checked_again_with_its_reused_optimizer(check, capsys, second):
    """The checks armed again only at an optimizer built at a new line: a second training that
    reused the first one's optimizer (fine-tuning with a head added to it), or rebuilt it at the
    same line (a loop of folds), went unchecked. Now a training that starts over, where the
    epoch given to set_epoch goes back at its line or for its sampler, arms them again and
    checks every optimizer at its next two steps: the bare head is one finding at the
    optimizer's line, in a block of its own."""
    checking = check()
    rt._STATE.self_check = checking
    checking.install()

    wrappers = []  # alive: the checks hold wrappers weakly

    def wrap(model):
        wrappers.append(Wrapper(model))
        checking.wrapped.add(wrappers[-1])
        return model

    source = STARTS_OVER.replace("SECOND", SECOND[second])
    scope = {"DATA": DATA, "ARMED": [], "rt": rt, "WRAP": wrap}
    exec(compile(source, "train.py", "exec"), scope)
    assert scope["ARMED"] == [True, *[False] * 7, True, *[False] * 7]  # 4 batches a pass, 2 passes each
    assert checking.restarts == 1 and not checking.step_undo
    line = next(n for n, text in enumerate(source.splitlines(), 1) if text.startswith("optimizer = "))
    assert checking.stepped[scope["optimizer"]].key == f"train.py:{line}#0~1"
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and len(err) == 2
    assert err[1].startswith(f"train.py:{line}: unwrapped-parameters: this optimizer steps 2 parameter(s) of Linear")


@pytest.fixture
def rank0_of_2_with_a_store(monkeypatch):
    """Rank 0 of 2, exchanging through an in-memory store that the test fills for rank 1."""
    store = torch.distributed.HashStore()
    monkeypatch.setattr(rt, "_default_store", lambda: store)
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    return store


def test_a_process_that_never_reaches_the_2nd_step_is_a_finding_after_a_bounded_wait(check, capsys, rank0_of_2_with_a_store):
    waiting = check()
    waiting.wait = 0.2  # rank 1 never sets its checksums
    run(waiting, passes=1)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 2 problem(s) found"
    assert err[1].startswith(f"train.py:{line_of('optimizer = ')}: unwrapped-parameters: ")
    assert err[2].startswith(f"train.py:{line_of('optimizer.step()')}: missing-step: process(es) 1 did not "
                             "reach this optimizer's 2nd step within 0.2 s of process 0: ")
    assert "a manual change: step the optimizer on every process" in err[2] and len(err) == 3


class MirrorStore:
    """The store of rank 0 of 2 where rank 1 does exactly what rank 0 does: each value rank 0
    sets under ``.../0`` is set under ``.../1`` too."""

    def __init__(self):
        self.values = {}

    def set(self, key, value):
        self.values[key] = self.values[key[:-1] + "1"] = value

    def check(self, keys):
        return all(key in self.values for key in keys)

    def get(self, key):
        return self.values[key]


HAND_WRITTEN_UPDATE = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader
    loader = DataLoader(DATA, batch_size=2, shuffle=True)
    model = torch.nn.Linear(4, 1)
    for epoch in range(4):
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x), y).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
                    p.grad = None
""")


def test_without_a_torch_optimizer_the_checks_end_after_50_backward_passes_and_say_what_all_agree_on(
        check, capsys, monkeypatch):
    """d2l's train_ch3 (second fresh sweep): `sgd(params, lr)` by hand, no torch.optim. The loader
    every process read whole waited for an optimizer's 2nd step that never came, and the per-step
    hooks stayed for the whole run; at exit the finding, which needs every process's agreement,
    was dropped: the run was silent."""
    monkeypatch.setattr(rt, "_default_store", MirrorStore)
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    checking = check()
    rt._STATE.self_check = checking
    checking.install()
    exec(compile(HAND_WRITTEN_UPDATE, "train.py", "exec"), {"DATA": DATA})  # 4 passes of 16 batches
    assert checking.backwards == rt.CHECKED_STEPS and not checking.step_undo
    assert torch.autograd.backward is BACKWARD and _BaseDataLoaderIter.__next__ is NEXT
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and len(err) == 2
    assert err[1].startswith("train.py:3: unsharded-loader: this training loader's RandomSampler reads the "
                             "whole data set in every process")


KEPT_ITERATOR = textwrap.dedent("""\
    import torch
    from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, RandomSampler, Sampler
    class Forever(Sampler):
        def __init__(self, batches):
            self.batches = batches
        def __iter__(self):
            while True:
                yield from self.batches
    class Endless:
        def __init__(self, data):
            batches = BatchSampler(SAMPLER, batch_size=4, drop_last=True)
            self.iterator = iter(DataLoader(data, batch_sampler=Forever(batches)))
        def __iter__(self):
            while True:
                yield next(self.iterator)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    draws = zip(*[Endless(DATA), Endless(OTHER)])
    for step in range(4):
        loss = sum(torch.nn.functional.mse_loss(model(x), y) for x, y in next(draws))
        if TRAIN:
            optimizer.zero_grad()
            loss.backward()
        optimizer.step()
""")


@pytest.mark.parametrize("sampler, train, found", [
    ("RandomSampler(data, replacement=True)", True, True),
    ("DistributedSampler(data, num_replicas=2, rank=0)", True, False),  # sharded
    ("RandomSampler(data, replacement=True)", False, False),  # no backward between its batches
])
def test_a_loader_whose_iterator_alone_is_kept_is_judged_at_its_construction_line(
        check, capsys, monkeypatch, sampler, train, found):
    """DomainBed's InfiniteDataLoader (sixth fresh sweep): `self.iterator = iter(DataLoader(...,
    batch_sampler=...))` in a class, drawn by the class's own __iter__ through zip() and next().
    Nothing held the DataLoader once its iterator was made: the pass's record of its loader was
    a weak reference, gone before the 2nd batch, and the loader was never judged (silent)."""
    monkeypatch.setattr(rt, "_default_store", MirrorStore)
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    checking = check()
    rt._STATE.self_check = checking
    checking.install()
    program = KEPT_ITERATOR.replace("SAMPLER", sampler)
    other = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    exec(compile(program, "train.py", "exec"), {"DATA": DATA, "OTHER": other, "TRAIN": train})
    err = [text for text in capsys.readouterr().err.splitlines() if "unsharded-loader" in text]
    line = next(n for n, text in enumerate(program.splitlines(), 1) if "self.iterator = " in text)
    said = (f"train.py:{line}: unsharded-loader: this training loader gave every process the same batch: "
            "every process trains on all the data; ")
    # two loaders built at one line over two data sets: one line to read
    assert [text[:len(said)] for text in err] == ([said] if found else [])


def test_an_optimizers_exchange_has_one_name_on_every_process_whatever_its_folder(check):
    """Each node's `ddpify run` converts the script into a workspace of its own: the same optimizer
    is built at /tmp/ddpify-run-<random>/train.py:98 on each, and must meet the others' checksums."""
    node0, node1 = check(), check()
    assert node0.exchange_key(("/tmp/ddpify-run-a1/train.py", 98)) == "train.py:98#0" == \
        node1.exchange_key(("/tmp/ddpify-run-b2/train.py", 98))
    assert node0.exchange_key(("/tmp/ddpify-run-a1/train.py", 98)) == "train.py:98#1"  # a second one there
    assert node0.exchange_key(("/tmp/ddpify-run-a1/lib/train.py", 98)) == "train.py:98#2"  # one name, one count


def test_the_checksums_of_another_process_come_from_the_store(check, capsys, rank0_of_2_with_a_store):
    import pickle

    model = torch.nn.Linear(4, 1)
    comparing = check()
    comparing.prefix = "ddpify/verify/test/"
    record = rt._Stepped(("train.py", 5), list(model.parameters()), comparing.exchange_key(("train.py", 5)))
    assert record.key == "train.py:5#0" and comparing.exchange_key(("train.py", 5)) == "train.py:5#1"
    rank1 = ([], [int(rt._checksum(model.weight)), 0], {})  # the same weight, another bias
    rank0_of_2_with_a_store.set("ddpify/verify/test/train.py:5#0/1", pickle.dumps(rank1))
    comparing.compare(record)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and len(err) == 2
    assert err[1].startswith("train.py:5: diverged-parameters: after this optimizer's 2nd step 1 of 2 "
                             "parameters differ between processes (bias)")


@pytest.mark.parametrize("rank1_lr, found", [(0.2, True), (0.1, False)])
def test_an_optimizer_whose_settings_differ_between_processes_is_a_finding(check, capsys, rank0_of_2_with_a_store,
                                                                           rank1_lr, found):
    """An LR finder over a sharded loader picks each process's learning rate from its own shard's
    losses (`best_lr = finder.range_test(loader)`, then `g["lr"] = best_lr`): the same averaged
    gradients, different updates. The self-check said only "diverged-parameters ... change the
    weights only by the optimizer's step", which the program does; the settings are named now."""
    import pickle

    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    comparing = check()
    comparing.prefix = "ddpify/verify/test/"
    record = rt._Stepped(("train.py", 12), list(model.parameters()), comparing.exchange_key(("train.py", 12)))
    record.settings = rt._settings(optimizer)
    other = torch.optim.SGD(model.parameters(), lr=rank1_lr, momentum=0.9)
    sums = [int(rt._checksum(p)) for p in model.parameters()]
    rank0_of_2_with_a_store.set("ddpify/verify/test/train.py:12#0/1", pickle.dumps(([], sums, {}, rt._settings(other))))
    comparing.compare(record)
    err = [line for line in capsys.readouterr().err.splitlines() if "differing-settings" in line]
    assert bool(err) is found
    if found:
        assert err[0].startswith("train.py:12: differing-settings: after this optimizer's 2nd step its settings differ "
                                 "between processes (lr: 0.1, 0.2, in rank order)")


def test_a_synced_model_whose_parameters_differ_after_the_2nd_step_is_a_finding(check, capsys, rank0_of_2_with_a_store):
    """pt.darts' search (seventh fresh sweep, tuning): the controller is synced (sync_gradients),
    yet the architect sets its alphas' gradients by hand (`alpha.grad = da - xi * h`, from a
    deepcopy of the model) and perturbs its weights in place: the processes' parameters differed
    after the 2nd step and the self-check, which took synced parameters for synchronised, said
    nothing."""
    import pickle

    model = torch.nn.Linear(4, 1)
    for param in model.parameters():
        param._ddpify_synced = True  # as sync_gradients marks them
    comparing = check()
    comparing.prefix = "ddpify/verify/test/"
    record = rt._Stepped(("search.py", 9), list(model.parameters()), comparing.exchange_key(("search.py", 9)))
    rank1 = ([], [int(rt._checksum(model.weight)), 0], {})
    rank0_of_2_with_a_store.set("ddpify/verify/test/search.py:9#0/1", pickle.dumps(rank1))
    comparing.compare(record)
    err = capsys.readouterr().err.splitlines()
    assert err[1:] and err[1].startswith("search.py:9: diverged-parameters: after this optimizer's 2nd step 1 of 2 "
                                         "parameters differ between processes (bias)")


def at_exit_of_rank0(check, monkeypatch, rank1=None, failed=False, strict=False):
    """Rank 0 of 2 at the program's end with one DDP model (a Linear wrapped at train.py:7), rank
    1's exit payload in the store where given; runs what atexit runs. Returns the model."""
    import pickle

    model = torch.nn.Linear(4, 1)
    wrapper = Wrapper(model)
    checking = check(strict)
    checking.prefix, checking.wait = "ddpify/verify/test/", 0.2
    checking.wraps[wrapper] = (("train.py", 7), "train.py:7#0")
    monkeypatch.setattr(rt._STATE, "exit_check", checking)
    monkeypatch.setattr(rt._STATE, "failed", failed)
    if rank1 is not None:
        rt._default_store().set("ddpify/verify/test/exit/1", pickle.dumps(rank1(model)))
    rt._check_at_exit()
    assert rt._STATE.exit_check is None  # once: the next exit hook does nothing
    return checking


def test_models_that_end_different_are_one_finding_at_their_wrap_line(check, capsys, monkeypatch, rank0_of_2_with_a_store):
    """unet_nb (second fresh sweep): each process kept the best weights by the loss of its own
    half of a sharded validation loader and loaded them at the end. The parameters were the
    same after the 2nd step and differed at exit, and nothing said so."""
    at_exit_of_rank0(check, monkeypatch, rank1=lambda model: (False, {"train.py:7#0": [int(rt._checksum(model.weight)), 0]}, HOST, {}))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and len(err) == 2
    assert err[1].startswith("train.py:7: diverged-at-exit: at the program's end 1 of 2 parameters of this "
                             "model differ between processes (bias): the replicas ended different")
    assert "a best-weights copy chosen by the loss of a sharded validation loader" in err[1]
    assert "all-reduce the value first (reduce_sum)" in err[1]


@pytest.mark.parametrize("rank1, failed", [
    (lambda model: (False, {"train.py:7#0": [int(rt._checksum(p)) for p in model.parameters()]}, HOST, {}), False),  # equal
    (None, False),  # rank 1 never arrives: no finding about the parameters
    (lambda model: (True, {"train.py:7#0": [0, 0]}, HOST, {}), False),  # a divergence the run already reported
    (lambda model: (False, {"train.py:7#0": [0, 0]}, HOST, {}), True),  # an exception ended the program
])
def test_models_that_end_alike_or_cannot_be_compared_print_nothing(check, capsys, monkeypatch, rank0_of_2_with_a_store, rank1, failed):
    at_exit_of_rank0(check, monkeypatch, rank1=rank1, failed=failed)
    assert capsys.readouterr().err == ""
    assert rank0_of_2_with_a_store.check(["ddpify/verify/test/exit/0"]) is not failed  # no exchange after an exception


class Exited(Exception):
    """Stands for ``os._exit(status)``, which would end the test run."""


@pytest.fixture
def exiting(monkeypatch, tmp_path):
    """``os._exit`` raises Exited; the process group's teardown and logging's are recorded;
    torchrun's error file is tmp_path/error.json. Returns what happened, in order."""
    happened = []

    def exit(status):
        happened.append(("exit", status))
        raise Exited(status)

    monkeypatch.setattr(rt.os, "_exit", exit)
    monkeypatch.setattr(rt, "_destroy", lambda: happened.append(("destroy",)))
    monkeypatch.setattr(logging, "shutdown", lambda: happened.append(("logging",)))
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(tmp_path / "error.json"))
    return happened


def differs_in_bias(model):
    return False, {"train.py:7#0": [int(rt._checksum(model.weight)), 0]}, HOST, {}


def test_under_strict_a_finding_at_exit_ends_the_process_with_status_1(check, capsys, monkeypatch, rank0_of_2_with_a_store, exiting, tmp_path):
    """An exception in an exit hook leaves the exit status as it is, so under strict the exit
    checks printed their block and the job still succeeded. Now the process ends with status 1,
    after the teardown, with the finding in torchrun's error file and a file the program left
    open written out."""
    left_open = open(tmp_path / "log.txt", "w")
    left_open.write("epoch 1\n")
    with pytest.raises(Exited):
        at_exit_of_rank0(check, monkeypatch, rank1=differs_in_bias, strict=True)
    assert exiting == [("destroy",), ("logging",), ("exit", 1)]
    assert (tmp_path / "log.txt").read_text() == "epoch 1\n"
    left_open.close()
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and " diverged-at-exit: " in err[1] and len(err) == 2
    error = json.loads((tmp_path / "error.json").read_text())["message"]
    assert error["message"].startswith("SelfCheckError: ddpify self-check: 1 problem(s) found\ntrain.py:7: diverged-at-exit: ")


@pytest.mark.parametrize("strict, rank1, failed", [
    (True, lambda model: (False, {"train.py:7#0": [int(rt._checksum(p)) for p in model.parameters()]}, HOST, {}), False),
    (False, differs_in_bias, False),  # not strict: the block, and the exit status stays
    (True, differs_in_bias, True),  # an exception ended the program: its status is already 1
])
def test_a_strict_run_that_passes_or_a_run_not_strict_keeps_its_exit_status(check, capsys, monkeypatch, rank0_of_2_with_a_store, exiting, strict, rank1, failed):
    at_exit_of_rank0(check, monkeypatch, rank1=rank1, failed=failed, strict=strict)
    assert exiting == []
    assert ("diverged-at-exit" in capsys.readouterr().err) is (not strict)


def test_under_strict_findings_pending_at_exit_end_the_process_with_status_1(check, capsys, exiting, monkeypatch):
    """The program ends within its first steps (one optimizer step): the finding the step hook
    made is said at exit, and under strict ends the process with status 1."""
    checking = check(strict=True)
    rt._STATE.self_check = checking
    checking.install()
    monkeypatch.setattr(rt._STATE, "exit_check", checking)
    monkeypatch.setattr(rt._STATE, "failed", False)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
    with pytest.raises(Exited):
        rt._check_at_exit()
    assert exiting == [("destroy",), ("logging",), ("exit", 1)]
    assert " unwrapped-parameters: " in capsys.readouterr().err


@pytest.mark.parametrize("strict", [False, True])
def test_the_checks_at_exit_run_where_the_program_destroys_the_process_group(check, capsys, monkeypatch, rank0_of_2_with_a_store, strict):
    """A program that ends its run with dist.destroy_process_group() (DDP011's advice) took the
    store away before the exit hook: the exit checks compared nothing and said nothing. Now they
    run in that call, before the group goes; under strict the finding is raised there, at the
    program's line, an ordinary exception."""
    import pickle

    destroyed = []

    def destroy_process_group(group=None):
        destroyed.append(group)

    monkeypatch.setattr(torch.distributed, "destroy_process_group", destroy_process_group)
    checking = check(strict)
    rt._STATE.self_check = checking
    checking.install()
    checking.prefix, checking.wait = "ddpify/verify/test/", 0.2
    model = torch.nn.Linear(4, 1)
    wrapper = Wrapper(model)
    checking.wraps[wrapper] = (("train.py", 7), "train.py:7#0")
    monkeypatch.setattr(rt._STATE, "exit_check", checking)
    monkeypatch.setattr(rt._STATE, "failed", False)
    rank0_of_2_with_a_store.set("ddpify/verify/test/exit/1", pickle.dumps(differs_in_bias(model)))
    program = compile("import torch.distributed as dist\ndist.destroy_process_group()\n", "train.py", "exec")
    if strict:
        with pytest.raises(rt.SelfCheckError) as raised:
            exec(program, {})
        assert [f.check for f in raised.value.findings] == ["diverged-at-exit"]
        assert raised.traceback[1].path == "train.py" and raised.traceback[1].lineno == 1  # line 2, 0-based
        assert destroyed == []  # the exception ends the program; the exit hook destroys the group
    else:
        exec(program, {})
        assert destroyed == [None]
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and " diverged-at-exit: " in err[1] and len(err) == 2
    assert rt._STATE.exit_check is None and torch.distributed.destroy_process_group is destroy_process_group
    rt._check_at_exit()  # the exit hook then: nothing more
    assert capsys.readouterr().err == ""


def test_no_comparison_at_exit_with_one_process_or_the_checks_off(check, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    store = torch.distributed.HashStore()
    monkeypatch.setattr(rt, "_default_store", lambda: store)
    at_exit_of_rank0(check, monkeypatch)  # one process: get_world_size() is 1
    assert capsys.readouterr().err == "" and not store.check(["ddpify/verify/test/exit/0"])
    rt._install_self_check("off", 600.0)
    assert rt._STATE.exit_check is None and rt._STATE.self_check is None


WRITES = textwrap.dedent("""\
    import pathlib
    from ddpify_runtime import get_rank
    def save(path):  # a helper around a writer the analysis does not know (pathlib here; PIL, csv)
        pathlib.Path(path).write_text("sample")
    save("sample_0.png")
    with open(f"log_{get_rank()}.txt", "w") as log:
        log.write("epoch 1")
    with open("sample_0.png") as read_back:
        read_back.read()
""")


def rank0_writes(check, monkeypatch, rank1, code=WRITES):
    """Rank 0 of 2 runs ``code`` (WRITES) as train.py under the checks, then what atexit runs; rank
    1's exit payload (given its files) in the store where given."""
    import pickle

    checking = check()
    rt._STATE.self_check = checking
    checking.install()
    checking.prefix, checking.wait = "ddpify/verify/test/", 0.2
    monkeypatch.setattr(rt._STATE, "exit_check", checking)
    monkeypatch.setattr(rt._STATE, "failed", False)
    exec(compile(code, "train.py", "exec"), {})
    assert builtins.open is not OPEN  # recording (the whole run)
    if rank1 is not None:
        rt._default_store().set("ddpify/verify/test/exit/1", pickle.dumps((False, {}, *rank1(checking.writes))))
    rt._check_at_exit()
    assert builtins.open is io.open is OPEN  # the real open again
    return checking


def test_a_file_every_process_writes_is_one_finding_at_the_writers_line(check, capsys, monkeypatch, rank0_of_2_with_a_store, tmp_path):
    """ddpm, ddpm_cond (third fresh sweep): every process saved sample_0.png through PIL's
    Image.save, a writer the analysis did not know, and nothing said so."""
    checking = rank0_writes(check, monkeypatch, rank1=lambda writes: (HOST, {
        str(tmp_path / "sample_0.png"): ("train.py", 4), str(tmp_path / "log_1.txt"): ("train.py", 6)}))
    assert sorted(checking.writes) == [str(tmp_path / "log_0.txt"), str(tmp_path / "sample_0.png")]  # not what it read
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and len(err) == 2
    assert err[1].startswith("train.py:4: shared-write: every process wrote sample_0.png: each overwrites "
                             "the others' file")
    assert "guard the write with is_main_process() (or give each process its own path" in err[1]


ATOMIC_SAVE = textwrap.dedent("""\
    import torch
    from ddpify_runtime import atomic_write
    def save_ckpt(path):  # a helper that only writes: the conversion guards it where it is called
        with atomic_write(path) as tmp_path:
            torch.save({"w": 1}, tmp_path)
    save_ckpt("best_val.pth")
""")


def test_a_save_through_atomic_write_that_every_process_reached_is_one_finding_at_its_line(
        check, capsys, monkeypatch, rank0_of_2_with_a_store, tmp_path):
    """lc_train (eleventh sweep): a hook's call of the trainer's save helper had no guard, and both
    processes saved best_val.pth through atomic_write, unnamed: only the temporary files (hidden, one
    per process) were seen. The target is now recorded at the line of the `with`."""
    checking = rank0_writes(check, monkeypatch, code=ATOMIC_SAVE, rank1=lambda writes: (HOST, {
        str(tmp_path / "best_val.pth"): ("train.py", 4)}))
    assert checking.writes == {str(tmp_path / "best_val.pth"): ("train.py", 4)}
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and len(err) == 2
    assert err[1].startswith("train.py:4: shared-write: every process wrote best_val.pth: ")


def test_the_main_process_announces_its_writes_and_a_read_that_found_none_of_them_is_named(
        check, monkeypatch, rank0_of_2_with_a_store, tmp_path):
    """DCWP (31a): rank 1 loaded a checkpoint that the main process saved a moment later, and died
    silent. The main process puts each path it writes in the store; a process that a missing file
    ends waits for its path there (`early-read` at its read's line). Near miss: a file nobody writes
    in the run (missing before it, the program's own error): no finding, after the bounded wait."""
    checking = rank0_writes(check, monkeypatch, rank1=None, code=ATOMIC_SAVE)
    key = checking.wrote_key(str(tmp_path / "best_val.pth"))
    assert rank0_of_2_with_a_store.get(key) == b"train.py:4"
    checking.store = None  # rank 1 announces nothing
    (tmp_path / "best_val.pth").unlink()  # as rank 1 found the folder: before the main process's save
    rt._STATE.self_check = checking
    monkeypatch.setattr(rt, "get_rank", lambda: 1)
    monkeypatch.setattr(rt, "READ_WAIT_S", 0.3)
    found = {}
    for name in ("best_val.pth", "pretrained.pth"):
        try:
            exec(compile(f"import torch\nstate = torch.load({name!r})\n", "resume.py", "exec"), {})
        except FileNotFoundError as error:
            found[name] = rt._early_read_hint(error)
    assert found["pretrained.pth"] is None
    hint = found["best_val.pth"]
    assert (hint.check, hint.file, hint.line) == ("early-read", "resume.py", 2)
    assert hint.message.startswith("rank 1 read best_val.pth before the main process had written it: the main "
                                   "process writes it in this run (train.py:4)")


PROBED_NAME = textwrap.dedent("""\
    import os
    run = 1
    while os.path.exists(f"run_#{run}.lock"):
        run += 1
    with open(f"run_#{run}.log", "a") as log:
        log.write("epoch 1")
    for i in (0, 2):
        with open(f"img_{i}.png", "w") as picture:
            picture.write("x")
""")


def test_a_file_another_process_wrote_under_a_name_of_its_own_is_one_finding_at_its_line(
        check, capsys, monkeypatch, rank0_of_2_with_a_store, tmp_path):
    """Round 29's held-out kernelkd (decision 0251): its logger named the run by the lock files already
    there; the second process, a moment late, found the first one's and took the next number, and each
    appended to a log of its own (`run_#1.log`, `run_#2.log`): no path was written twice, and nothing
    said so. A file of one shape in one folder that each of two processes wrote once, under names that
    differ in numbers other than their ranks, is named at the other process's line. Near misses: each
    process's share of many files (`img_0.png`, `img_2.png` here, `img_1.png`, `img_3.png` there), and a
    file per process by rank (`log_1.txt` beside `log_0.txt`, the test above)."""
    rank0_writes(check, monkeypatch, code=PROBED_NAME, rank1=lambda writes: (HOST, {
        str(tmp_path / "run_#2.log"): ("logger.py", 84), str(tmp_path / "img_1.png"): ("train.py", 9),
        str(tmp_path / "img_3.png"): ("train.py", 9)}))
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found" and len(err) == 2, err
    assert err[1].startswith("logger.py:84: own-copy: process 1 wrote run_#2.log where the main process wrote "
                             "run_#1.log: one file under a name each process chose by itself"), err
    assert "from_main_process(lambda: name)" in err[1]


@pytest.mark.parametrize("rank1", [
    lambda writes: (HOST, {}),  # rank 1 wrote nothing (the main process alone saved)
    lambda writes: ("another-host", dict(writes)),  # the same paths on another node's disk
    None,  # rank 1 never arrives
])
def test_files_written_by_one_process_per_host_print_nothing(check, capsys, monkeypatch, rank0_of_2_with_a_store, rank1):
    rank0_writes(check, monkeypatch, rank1)
    assert capsys.readouterr().err == ""


SAVES = textwrap.dedent("""\
    import torch
    model = torch.nn.Linear(2, 1)
    def checkpoint(path):  # a helper in the program (an early-stopping class's save_checkpoint)
        torch.save(model.state_dict(), path)
    checkpoint("last.pt")
    SAVE(model.state_dict(), "best.pt")  # `from torch import save`, bound before the checks
    torch.jit.save(torch.jit.script(model), "scripted.pt")
    torch.save(model.state_dict(), ".cache/model.pt")  # a hidden folder below the working directory
""")


@pytest.mark.filterwarnings("ignore:`torch.jit.s:DeprecationWarning")
def test_torch_save_and_torch_jit_save_to_a_path_are_writes_even_under_a_hidden_folder(check, monkeypatch, tmp_path):
    """torch.save and torch.jit.save write through torch's C++ writer, not through open, so a
    checkpoint every process saved was not seen; and every path with a hidden part was left out,
    so a program run from under a hidden folder (~/.work/project) had no write recorded at all.
    Now torch's writers are recorded where torch hands them the path, whatever name the program
    calls torch.save by, and only hidden parts below the working directory count (caches, an
    atomic save's temporary file)."""
    run_dir = tmp_path / ".work" / "run"
    (run_dir / ".cache").mkdir(parents=True)
    monkeypatch.chdir(run_dir)
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    checking = check()
    checking.install()
    exec(compile(SAVES, "train.py", "exec"), {"SAVE": SAVE})
    assert checking.writes == {str(run_dir / "last.pt"): ("train.py", 4), str(run_dir / "best.pt"): ("train.py", 6),
                               str(run_dir / "scripted.pt"): ("train.py", 7)}
    assert torch.load(run_dir / "best.pt").keys() == {"weight", "bias"}  # saved as torch saves
    assert rt._hidden(str(run_dir / ".last.pt.123.abcd.tmp")) and rt._hidden(str(tmp_path / ".work" / ".cache" / "x"))
    assert not rt._hidden(str(tmp_path / ".work" / "out.txt"))


WRAPPER_SAVES = textwrap.dedent("""\
    import torch
    torch.save(WRAPPED.state_dict(), "bare.pt")  # what unwrap-model writes: no finding
    torch.save({"epoch": 1, "model": {"module." + k: v for k, v in WRAPPED.state_dict().items()}}, "keyed.pt")
    torch.save(NESTED.state_dict(), "nested.pt")  # a model whose one child is named module, not wrapped
""")


HOOKED_SAVE = textwrap.dedent("""\
    import torch
    saving = torch.save
    def hooked(obj, f, *args, **kwargs):  # a site hook's wrapper (the fresh sweep's probe)
        return saving(obj, f, *args, **kwargs)
    torch.save = hooked
""")


def test_a_save_through_a_site_hooks_wrapper_is_named_at_the_users_line(check, capsys, monkeypatch):
    """A `sitecustomize` that wraps `torch.save` (the fresh sweep's probe) is not where the program
    saves: the finding names the user's line."""
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    monkeypatch.setattr(torch, "save", torch.save)  # undone after the test
    exec(compile(HOOKED_SAVE, "/site/sitecustomize.py", "exec"), {})
    checking = check()
    checking.install()
    model = torch.nn.Linear(4, 1)
    wrapper = Wrapper(model)
    checking.wrapped.add(wrapper)
    exec(compile(WRAPPER_SAVES, "train.py", "exec"), {"WRAPPED": model, "NESTED": torch.nn.Sequential()})
    err = capsys.readouterr().err.splitlines()
    assert err[1].startswith("train.py:3: saved-wrapper:")


def test_a_save_of_the_wrappers_state_is_named_where_it_is_made(check, capsys, monkeypatch):
    """The analysis may miss a path to a save (a model returned in a tuple, then handed to
    another module's save helper): the save holds the wrapper's `module.` keys, and only the
    runtime sees it. A state dict of the bare model, or `module.` keys of a model that is not a
    wrapper's, is no finding."""
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    checking = check()
    checking.install()
    model = torch.nn.Linear(4, 1)
    wrapper = Wrapper(model)  # held: the checks keep their wrappers weakly
    checking.wrapped.add(wrapper)
    nested = torch.nn.Sequential()
    nested.add_module("module", torch.nn.Linear(2, 2))
    exec(compile(WRAPPER_SAVES, "train.py", "exec"), {"WRAPPED": model, "NESTED": nested})
    err = capsys.readouterr().err.splitlines()
    assert err == ["ddpify self-check: 1 problem(s) found", err[1]]
    assert err[1].startswith("train.py:3: saved-wrapper: this save holds a wrapper's state dict (keys that start with 'module.')")
    ddp = object.__new__(torch.nn.parallel.DistributedDataParallel)  # isinstance only: no process group here
    assert rt._saved_wrapper([{"net": ddp}], ()) == "the DistributedDataParallel wrapper, pickled whole"


def test_more_files_written_alike_than_shown_are_counted():
    writes = {f"/run/sample_{i}.png": ("train.py", 5) for i in range(5)}
    findings = rt._shared_writes([0, 1], [(False, {}, HOST, writes), (False, {}, HOST, writes)])
    assert [f.message.split(":")[0] for f in findings] == [
        "every process wrote /run/sample_0.png", "every process wrote /run/sample_1.png",
        "every process wrote /run/sample_2.png"]
    assert findings[-1].fix.endswith("; and 2 more file(s) written alike")


def test_no_write_is_recorded_with_one_process(check):
    check().install()  # one process: get_world_size() is 1
    assert builtins.open is OPEN


def test_a_hang_report_names_the_wait_then_the_users_frames_then_the_libraries():
    report = rt._stack_report(1, ("barrier()", ("train.py", 120), 0.0)).splitlines()
    assert report[0].startswith("ddpify hang: rank 1 waits in barrier() at train.py:120 (")
    assert all(line.startswith("ddpify hang: rank 1   ") for line in report[1:])
    assert "test_runtime_verify.py:" in report[1] and report[1].endswith(" in " + test_a_hang_report_names_the_wait_then_the_users_frames_then_the_libraries.__name__)
    libraries = [i for i, line in enumerate(report) if "(library)" in line]
    assert libraries and libraries == list(range(libraries[0], len(report)))  # pytest's frames, last


def test_the_hang_watchdog_has_ended_when_the_exit_hooks_have_run(monkeypatch):
    """A daemon thread still inside a store call (C++) when the interpreter finalizes is ended
    mid-call, and the process aborts at exit ("terminate called without an active exception"):
    the watchdog's thread must be over once the exit hooks ran, before finalization."""
    class Store:
        def set(self, key, value):
            pass

        def check(self, keys):
            return False

    hooks = []
    monkeypatch.setattr(rt, "_default_store", Store)
    monkeypatch.setattr(rt.atexit, "register", hooks.append)
    watchdog = rt._Watchdog.start(timeout=600.0)  # wakes every 10 s: alive until told to end
    assert watchdog.thread.is_alive()
    for hook in reversed(hooks):
        hook()
    assert not watchdog.thread.is_alive()


def test_a_check_that_ends_inside_a_step_leaves_the_hooks_after_it_running(check):
    """agt_dcgan (tenth sweep, part c): the repeated-order watch ended at its finding inside an
    optimizer step, its hook taken out of torch's dict of step hooks while torch looped over it,
    with the per-step checks' hook after it: "OrderedDict mutated during iteration" in the
    program's `optimizer.step()`. The checks' hooks now run from one hook of torch's, which goes
    once none is left."""
    checking = check()
    seen = []
    undo_first = checking.on_step(lambda *_: (seen.append("first"), undo_first()))
    undo_second = checking.on_step(lambda *_: seen.append("second"))
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    optimizer.step()
    optimizer.step()
    assert seen == ["first", "second", "second"]
    undo_second()
    assert not rt._optimizer_module()._global_optimizer_post_hooks


def test_a_training_data_sets_order_is_compared_by_what_it_holds_per_sample_and_per_class():
    """`data-order` (at exit): a list, tuple or array of one item per sample and a dict (a class
    numbering), of plain values, digested per attribute; items whose repr differs anyway (default
    object reprs) and values that are no sequence (a root folder) are not compared."""
    class Files(torch.utils.data.Dataset):
        def __init__(self, names):
            self.names, self.root = names, "data"
            self.index = {n: i for i, n in enumerate(names)}
            self.kept = [object() for _ in names]

        def __len__(self):
            return len(self.names)

        def __getitem__(self, i):
            return torch.zeros(1)

    mine = rt._order_fingerprint(torch.utils.data.Subset(Files(["a.wav", "b.wav", "c.wav"]), [0, 1]))
    other = rt._order_fingerprint(Files(["b.wav", "a.wav", "c.wav"]))
    assert sorted(mine) == ["index", "names"]
    site = ("train.py", 3)
    found = rt._orders_differ([(False, {}, "host", {}, {site: mine}), (False, {}, "host", {}, {site: other})])
    assert [(f.check, f.file, f.line) for f in found] == [("data-order", "train.py", 3)]
    assert found[0].message.startswith("this training loader's data set holds names, index differently on each process")
    assert not rt._orders_differ([(False, {}, "host", {}, {site: mine}), (False, {}, "host", {}, {site: mine})])
    assert not rt._orders_differ([(False, {}, "host", {}), (False, {}, "host", {})])  # no orders sent


LATE_LAYER = textwrap.dedent("""\
    import torch
    from torch.nn.parallel import DistributedDataParallel
    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Linear(4, 3)
            self.fc = None
        def forward(self, x):
            h = self.conv(x)
            if self.fc is None:
                self.fc = LAYER
            return self.fc(h)
    model = DistributedDataParallel(Encoder())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in torch.randn(3, 8, 4):
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
""")


@pytest.mark.parametrize("layer, late", [
    ("torch.nn.Linear(3, 2)", True),  # made in the first forward, after the wrap
    ("torch.nn.Identity()", False),  # near miss: a module without parameters made late
])
def test_parameters_a_model_makes_after_its_wrap_are_named_at_the_wrap(group, check, capsys, layer, late):
    """Issue 27, the twelfth sweep's GMM-VAE script: an encoder makes its fully connected layer in
    its first forward, after DDP wrapped the model: DDP holds only the parameters made before, so it
    neither broadcast nor averages the new ones (158 of 166 parameters diverged, said only as
    `diverged-parameters`, with no cause). The wrap line is named with what happened."""
    rt._STATE.self_check = check()
    rt._STATE.self_check.install()
    code = LATE_LAYER.replace("LAYER", layer)
    exec(compile(code, "train.py", "exec"), {})
    err = capsys.readouterr().err
    line = next(n for n, text in enumerate(code.splitlines(), 1) if text.startswith("model = Distributed"))
    said = f"train.py:{line}: late-parameters: 2 parameter(s) of Encoder (fc.weight, fc.bias) were made after this " \
           "DistributedDataParallel wrapped it"
    assert (said in err) is late and ("late-parameters" in err) is late


def test_a_shard_of_no_batch_is_a_finding_of_the_self_check(check, capsys, tmp_path, monkeypatch):
    """`empty-shard`: 20 samples in batches of 16 with drop_last, sharded over two processes, give
    each none: the training takes no step, and no optimizer's 2nd step ever exchanges anything. The
    self-check names the loader's line in its block and its JSON file when the loader is sharded;
    under strict it raises there."""
    monkeypatch.setattr(rt, "get_world_size", lambda: 2)
    monkeypatch.setattr(rt, "get_rank", lambda: 0)
    rt._STATE.self_check = check()
    rt.shard_loader(DataLoader(list(range(20)), batch_size=16, shuffle=True, drop_last=True))
    line = sys._getframe().f_lineno - 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ddpify self-check: 1 problem(s) found"
    assert f"test_runtime_verify.py:{line}: empty-shard: this training loader gives each of the 2 processes no " \
        "batch per pass (one process had 1)" in err[1]
    written = json.loads((tmp_path / "findings.json").read_text())
    assert [(f["check"], f["line"]) for f in written] == [("empty-shard", line)]
    rt._STATE.self_check, rt._STATE.shard_batches = check(strict=True), {}
    with pytest.raises(rt.SelfCheckError, match="empty-shard"):
        rt.shard_loader(DataLoader(list(range(20)), batch_size=16, shuffle=True, drop_last=True))
