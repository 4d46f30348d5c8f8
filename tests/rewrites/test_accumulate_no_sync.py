"""accumulate-no-sync: `no_sync()` on the gradient-accumulation micro-steps that provably do not step."""

from __future__ import annotations

import textwrap

import pytest

from tests.support.snippets import EPOCHS, IMPORTS, LOADER, MODEL, converted, rewrite_tests, run, script

NAME = "accumulate-no-sync"

ACCUMULATE = """\
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        loss = ((model(x) - y) ** 2).mean() / 2
        loss.backward()
        if (i + 1) % 2 == 0:
            opt.step()
            opt.zero_grad()
"""

PAIRS = [
    (IMPORTS + LOADER + MODEL + ACCUMULATE,
     IMPORTS + "from contextlib import nullcontext\nfrom ddpify_runtime import device_ids\n"
     "from torch.nn.parallel import DistributedDataParallel\n\n" + LOADER
     + MODEL.replace("\nopt", "\nmodel = DistributedDataParallel(model, device_ids=device_ids(model))\nopt") + """\
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        sync_step = (i + 1) % 2 == 0
        with nullcontext() if sync_step else model.no_sync():
            loss = ((model(x) - y) ** 2).mean() / 2
            loss.backward()
        if sync_step:
            opt.step()
            opt.zero_grad()
"""),
]

UNCHANGED = [
    IMPORTS + LOADER + MODEL + EPOCHS,  # steps every batch: nothing to skip
    # the micro-steps left at the end of an epoch step on unsynchronised gradients
    IMPORTS + LOADER + MODEL + ACCUMULATE + "    opt.step()\n",
]

# `no_sync()` exists on the DDP wrapper only: the pairs run with wrap-model
test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED, also=frozenset({"wrap-model"}))


def test_gradient_accumulation_skips_all_reduce_on_micro_steps():
    code, _ = run(script(loop="""
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss = loss_fn(model(x), y) / 4
        loss.backward()
        if (i + 1) % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
"""))
    assert "sync_step = (i + 1) % 4 == 0\n" in code
    assert ("with nullcontext() if sync_step else model.no_sync():\n"
            "            loss = loss_fn(model(x), y) / 4\n            loss.backward()\n") in code
    assert "if sync_step:" in code


def test_an_if_that_only_steps_a_scheduler_is_no_accumulation_boundary():
    code, _ = run(script(loop="""
for epoch in range(3):
    for i, (x, y) in enumerate(train_loader):
        loss_fn(model(x), y).backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
"""))
    assert "no_sync" not in code


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


def test_fsdp_micro_steps_skip_the_reduce_scatter_with_set_requires_gradient_sync():
    from tests.support.snippets import assert_rewrites

    after = IMPORTS + "from ddpify_runtime import shard_model\n\n" + LOADER + "model = torch.nn.Linear(2, 1)\n" \
        "model = shard_model(model)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + """\
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        sync_step = (i + 1) % 2 == 0
        model.set_requires_gradient_sync(sync_step)
        loss = ((model(x) - y) ** 2).mean() / 2
        loss.backward()
        if sync_step:
            opt.step()
            opt.zero_grad()
"""
    assert_rewrites(NAME, IMPORTS + LOADER + MODEL + ACCUMULATE, after, also=frozenset({"wrap-model"}),
                    strategy="fsdp")
