"""agree-stop and accumulate-no-sync on snippets: what must agree, what must stay, and when
`no_sync` is safe (issue #9)."""

from __future__ import annotations

import textwrap

import pytest

from ddpify.convert import convert

HEADER = """
import argparse
import itertools
import torch
from torch.utils.data import DataLoader, TensorDataset
args = argparse.ArgumentParser().parse_args()
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = torch.nn.MSELoss()
"""


def converted(body: str, header: str = HEADER) -> str:
    code = convert(header + textwrap.dedent(body)).code
    compile(code, "<converted>", "exec")
    return code


def lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines()]


# --- agree-stop: exits that must be agreed -------------------------------------------------------

STEP_LOOP = """
it = iter(train_loader)
{loop}
    try:
        x, y = next(it)
    except StopIteration:
        break
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    if loss.item() < args.target:
        break
    if step >= args.max_steps:
        break
"""


@pytest.mark.parametrize("loop", ["for step in itertools.count():", "step = 0\nwhile True:\n    step += 1"])
def test_a_loss_target_in_a_step_loop_is_agreed_but_the_step_limit_and_stop_iteration_are_not(loop):
    code = lines(converted(STEP_LOOP.format(loop=loop)))
    assert "if agree_on(loss.item() < args.target):" in code
    assert "if step >= args.max_steps:" in code
    assert "except StopIteration:" in code and "while agree_on(True):" not in code
    assert code.count("break") == 3


def test_a_continue_that_skips_the_backward_is_agreed():
    code = lines(converted("""
for epoch in range(3):
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        if torch.isnan(loss):
            continue
        loss.backward()
        optimizer.step()
"""))
    assert "if agree_on(torch.isnan(loss)):" in code


def test_a_while_true_step_loop_numbers_its_passes_with_its_counter():
    code = lines(converted(STEP_LOOP.format(loop="step = 0\nwhile True:\n    step += 1")))
    assert code[code.index("while True:") + 1] == "set_epoch(train_loader, step)"


def test_a_data_dependent_while_condition_is_agreed():
    code = converted("""
        loss = torch.tensor(1.0)
        while loss > 0.01:
            for x, y in train_loader:
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
        """)
    assert "while agree_on(loss > 0.01):" in lines(code)


def test_a_return_from_inside_a_training_loop_is_agreed():
    code = converted("""
        def train(model, loader, target):
            for epoch in range(10):
                for x, y in loader:
                    loss = loss_fn(model(x), y)
                    loss.backward()
                    optimizer.step()
                    if loss.item() < target:
                        return epoch
                if epoch == args.epochs:
                    return epoch
            return 10
        train(model, train_loader, args.target)
        """)
    assert "if agree_on(loss.item() < target):" in lines(code)
    assert "if epoch == args.epochs:" in lines(code)


def test_a_condition_mixing_a_counter_and_a_loss_is_agreed_whole():
    code = converted("""
        step = 0
        for epoch in range(3):
            for x, y in train_loader:
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                step += 1
                if loss < 1e-3 or step >= args.max_steps:
                    break
        """)
    assert "if agree_on(loss < 1e-3 or step >= args.max_steps):" in lines(code)


@pytest.mark.parametrize("counter", [
    "if x.sum() > 0:\n                    step += 1",
    "step = int(loss.item())",
])
def test_a_counter_written_from_data_or_on_some_paths_only_is_agreed(counter):
    code = converted(f"""
        step = 0
        for epoch in range(3):
            for x, y in train_loader:
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                {counter}
                if step >= 100:
                    break
        """)
    assert "if agree_on(step >= 100):" in lines(code)


def test_every_if_between_the_loop_and_the_exit_is_agreed_once():
    code = converted("""
        for epoch in range(3):
            for x, y in train_loader:
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
            if loss.item() > 10:
                print("diverged")
                break
            elif loss.item() < 0.1:
                if args.stop_early:
                    break
                return_value = epoch
                break
        """)
    assert "if agree_on(loss.item() > 10):" in lines(code)
    assert "elif agree_on(loss.item() < 0.1):" in lines(code)
    assert "if args.stop_early:" in lines(code)
    assert "agree_on(agree_on(" not in code


# --- agree-stop: exits that stay as they are -----------------------------------------------------

@pytest.mark.parametrize("condition", [
    "args.dry_run",
    "i == 3",
    "i + 1 == len(train_loader)",
    "epoch >= args.epochs - 1 and i > len(train_loader.dataset) // 8",
    "step >= limit",
    "step >= max(limit, 1)",
])
def test_conditions_every_process_shares_stay(condition):
    code = converted(f"""
        limit = args.max_steps * 2
        step = 0
        for epoch in range(3):
            for i, (x, y) in enumerate(train_loader):
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                step = step + 1
                if {condition}:
                    break
        """)
    assert f"if {condition}:" in lines(code) and "agree_on" not in code


def test_a_parameter_every_caller_passes_from_the_arguments_stays():
    code = converted("""
        def fit(model, loader, max_steps, epochs=3):
            step = 0
            while step < max_steps:
                for x, y in loader:
                    loss_fn(model(x), y).backward()
                    optimizer.step()
                    step += 1
                    if step == max_steps or step > epochs * len(loader):
                        return step
        fit(model, train_loader, args.max_steps)
        """)
    assert "while step < max_steps:" in lines(code)
    assert "if step == max_steps or step > epochs * len(loader):" in lines(code)
    assert "agree_on" not in code


@pytest.mark.parametrize("body", [
    # a loop that does not train: leaving it decides nothing about collectives
    """
    for epoch in range(3):
        for x, y in train_loader:
            loss_fn(model(x), y).backward()
            optimizer.step()
            for p in model.parameters():
                if p.grad is None:
                    break
    """,
    # a return in a function defined inside the loop leaves that function only
    """
    for epoch in range(3):
        def check(v):
            if v.item() > 1:
                return True
        for x, y in train_loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            check(loss)
    """,
])
def test_exits_that_leave_no_training_loop_stay(body):
    assert "agree_on" not in converted(body)


def test_without_a_wrapped_model_nothing_is_agreed():
    header = HEADER.replace("torch.optim.SGD(model.parameters(), lr=0.1)", "torch.optim.SGD(get_params(), lr=0.1)")
    code = converted("""
        for x, y in train_loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            if loss.item() < 0.1:
                break
        """, header)
    assert "model = DistributedDataParallel(" not in code and "agree_on" not in code


# --- accumulate-no-sync: real accumulation ------------------------------------------------------

def test_accumulation_that_also_steps_on_the_last_batch_gets_no_sync():
    code = converted("""
        scaler = torch.amp.GradScaler("cuda", enabled=False)
        micro_step = 0
        for epoch in range(3):
            for i, (x, y) in enumerate(train_loader):
                loss = loss_fn(model(x), y)
                scaler.scale(loss / 4).backward()
                if (micro_step + 1) % 4 == 0 or i + 1 == len(train_loader):
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad()
                micro_step += 1
            scheduler.step()
        """)
    assert ("        sync_step = (micro_step + 1) % 4 == 0 or i + 1 == len(train_loader)\n"
            "        with nullcontext() if sync_step else model.no_sync():\n"
            "            loss = loss_fn(model(x), y)\n"
            "            scaler.scale(loss / 4).backward()\n"
            "        if sync_step:\n") in code


# --- accumulate-no-sync: steps that are no accumulation -----------------------------------------

HAND_STEP = """
with torch.no_grad():
    for p in model.parameters():
        p.add_(p.grad, alpha=-0.1)
"""


@pytest.mark.parametrize("condition, otherwise", [
    ("step >= args.warmup_steps", HAND_STEP),  # hand-written SGD on the other steps
    ("(i + 1) % 4 == 0", HAND_STEP),
    ("(i + 1) % 4 == 0", "sgd_by_hand(model)"),  # through a helper
    ("(i + 1) % 4 == 0", "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"),
    ("(i + 1) % 4 == 0", "print(sum(p.grad.norm() for p in model.parameters()))"),  # reads the gradients
    ("(i + 1) % 4 == 0", "for p in model.parameters():\n    p.data -= 0.1 * p.data.sign()"),
    ("args.use_optimizer", HAND_STEP),  # not periodic
    ("loss.item() < 0.5", "pass"),  # data-dependent
])
def test_an_if_with_another_step_on_its_other_path_gets_no_no_sync(condition, otherwise):
    code = converted(f"""
        def sgd_by_hand(net):
            for p in net.parameters():
                p.data.add_(p.grad, alpha=-0.1)
        step = 0
        for epoch in range(3):
            for i, (x, y) in enumerate(train_loader):
                loss = loss_fn(model(x), y)
                loss.backward()
                if {condition}:
                    optimizer.step()
                else:
                    {textwrap.indent(textwrap.dedent(otherwise).strip(), " " * 20).lstrip()}
                optimizer.zero_grad()
                step += 1
        """)
    assert "no_sync" not in code


@pytest.mark.parametrize("extra", [
    "    optimizer.step()  # the micro-steps left at the end of an epoch",
    "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
])
def test_a_step_after_the_batch_loop_reads_unsynchronised_gradients(extra):
    code = converted(f"""
        for epoch in range(3):
            for i, (x, y) in enumerate(train_loader):
                loss = loss_fn(model(x), y)
                loss.backward()
                if (i + 1) % 4 == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        {extra}
        """)
    assert "no_sync" not in code


def test_a_counter_changed_between_the_backward_and_the_if_gets_no_no_sync():
    code = converted("""
        micro_step = 0
        for epoch in range(3):
            for x, y in train_loader:
                loss = loss_fn(model(x), y)
                loss.backward()
                micro_step += 1
                if micro_step % 4 == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """)
    assert "no_sync" not in code
