"""agree-stop: data-dependent exits of loops that train are agreed across processes (`agree_on`)."""

from __future__ import annotations

import pytest

from tests.support.snippets import (ARGS_HEADER, EPOCHS, IMPORTS, LOADER, MODEL, STEP_LOOP, TRAIN_LOOP,
                                    converted, lines, rewrite_tests, run, script)

NAME = "agree-stop"

STOPS = """\
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    if loss.item() < 0.01:
        break
    if epoch == 5:
        break
"""

PAIRS = [
    # the loss target is agreed; the counter test is the same everywhere and stays
    (IMPORTS + LOADER + MODEL + STOPS,
     IMPORTS + "from ddpify_runtime import agree_on\n\n" + LOADER + MODEL
     + STOPS.replace("if loss.item() < 0.01:", "if agree_on(loss.item() < 0.01):")),
]

UNCHANGED = [
    IMPORTS + LOADER + MODEL + EPOCHS,
    IMPORTS + LOADER + MODEL + STOPS.replace("    if loss.item() < 0.01:\n        break\n", ""),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_early_stop_is_agreed_across_processes():
    code, _ = run(script(loop=TRAIN_LOOP + "    if loss_fn(model(x), y) < 0.1:\n        break\n"))
    assert "if agree_on(loss_fn(model(x), y) < 0.1):" in code


def test_a_data_dependent_break_in_a_sharded_batch_loop_is_agreed_but_shared_conditions_are_not():
    code, _ = run("import argparse\nargs = argparse.ArgumentParser().parse_args()\n" + script(loop="""
step = 0
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y)
        loss.backward()
        step += 1
        if loss.item() < 0.5:
            break
        if args.dry_run or step >= 100 or i == 3:
            break
"""))
    assert "if agree_on(loss.item() < 0.5):" in code
    assert "if args.dry_run or step >= 100 or i == 3:" in code


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


@pytest.mark.parametrize("counter, condition", [
    ("step += 1", "loss < 1e-3 or step >= args.max_steps"),  # a counter and a loss: agreed whole
    # a counter written from data or on some paths only
    ("if x.sum() > 0:\n                    step += 1", "step >= 100"),
    ("step = int(loss.item())", "step >= 100"),
])
def test_a_condition_on_data_is_agreed_whole(counter, condition):
    code = converted(f"""
        step = 0
        for epoch in range(3):
            for x, y in train_loader:
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                {counter}
                if {condition}:
                    break
        """)
    assert f"if agree_on({condition}):" in lines(code)


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
    header = ARGS_HEADER.replace("torch.optim.SGD(model.parameters(), lr=0.1)", "torch.optim.SGD(get_params(), lr=0.1)")
    code = converted("""
        for x, y in train_loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            if loss.item() < 0.1:
                break
        """, header)
    assert "model = DistributedDataParallel(" not in code and "agree_on" not in code


def test_fsdp_branches_around_a_gather_or_a_forward_are_agreed_unless_shared():
    from tests.support.snippets import only

    script = IMPORTS + LOADER + MODEL + "best = 1.0\n" + STOPS.replace("    if loss.item() < 0.01:\n        break\n", """\
    if loss.item() < best:
        torch.save(model.state_dict(), 'best.pt')
    if epoch == 1:
        torch.save(model.state_dict(), 'last.pt')
    if x.sum() > 0:
        print(model(x))
""")
    code = only(NAME, script, frozenset({"wrap-model"}), strategy="fsdp")
    assert "    if agree_on(loss.item() < best):\n" in code and "    if agree_on(x.sum() > 0):\n" in code
    assert "    if epoch == 1:\n" in code  # a loop counter: the same on every process
    ddp = only(NAME, script, frozenset({"wrap-model"}))
    assert "agree_on" not in ddp  # under DDP the save runs on the main process only: no collective
