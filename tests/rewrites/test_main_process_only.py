"""main-process-only: file writes, checkpoints, loggers and progress bars on the main process only."""

from __future__ import annotations

import textwrap

from tests.support.snippets import EPOCHS, IMPORTS, LOADER, MODEL, rewrite_tests, run, script

NAME = "main-process-only"

WRITES = """\
    torch.save(model.state_dict(), "m.pt")
    with open("log.txt", "a") as f:
        f.write(f"{epoch}\\n")
"""

PAIRS = [
    # adjacent writes share one guard; the checkpoint is written to a temporary file and renamed
    (IMPORTS + LOADER + MODEL + EPOCHS + WRITES,
     IMPORTS + "from ddpify_runtime import atomic_write, is_main_process\n\n" + LOADER + MODEL + EPOCHS
     + """\
    if is_main_process():
        with atomic_write("m.pt") as tmp_path:
            torch.save(model.state_dict(), tmp_path)
        with open("log.txt", "a") as f:
            f.write(f"{epoch}\\n")
"""),
    # a helper that only writes: guarded where it is called, its save atomic inside
    (IMPORTS + "def save(m, path):\n    torch.save(m, path)\n\n\n" + LOADER + MODEL + EPOCHS + "save(model, 'm.pt')\n",
     IMPORTS + "from ddpify_runtime import atomic_write, is_main_process\n\n"
     + "def save(m, path):\n    with atomic_write(path) as tmp_path:\n        torch.save(m, tmp_path)\n\n\n"
     + LOADER + MODEL + EPOCHS + "if is_main_process():\n    save(model, 'm.pt')\n"),
    # not a file: an in-memory buffer, or an open file (guarded as a whole)
    ("import io\n" + IMPORTS + LOADER + MODEL + EPOCHS + "buffer = io.BytesIO()\ntorch.save(model, buffer)\n",
     "import io\n" + IMPORTS + "from ddpify_runtime import is_main_process\n\n" + LOADER + MODEL + EPOCHS
     + "buffer = io.BytesIO()\nif is_main_process():\n    torch.save(model, buffer)\n"),
]

UNCHANGED = [
    IMPORTS + LOADER + MODEL + EPOCHS + '    print(f"epoch {epoch}")\n',  # the runtime silences print
    IMPORTS + LOADER + MODEL + EPOCHS + '    with open("log.txt") as f:\n        print(f.read())\n',  # reading
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_writes_are_guarded_together_and_a_sole_body_if_absorbs_the_guard():
    code, _ = run(script(tail="""
        import json
        torch.save(model.state_dict(), "a.pt")
        with open("log.json", "w") as f:
            json.dump({}, f)
        if epoch == 2:
            torch.save(model.state_dict(), "b.pt")
        """))
    assert code.count("is_main_process():") == 2
    assert "if epoch == 2 and is_main_process():" in code
    assert "if is_main_process():\n    with atomic_write(\"a.pt\") as tmp_path:\n" \
           "        torch.save(model.module.state_dict(), tmp_path)\n    with open" in code


def test_loggers_bars_and_helpers_that_only_write():
    code, _ = run("from tqdm import tqdm\nfrom torch.utils.tensorboard import SummaryWriter\n" + script(
        loop="""
writer = SummaryWriter()
def save(path):
    torch.save(model.state_dict(), path)
    print("saved")
for epoch in range(3):
    for x, y in tqdm(train_loader):
        loss_fn(model(x), y).backward()
        writer.add_scalar("loss", 1.0)
    save("m.pt")
"""))
    assert "writer = SummaryWriter() if is_main_process() else None" in code
    assert "tqdm(train_loader, disable=not is_main_process())" in code
    assert "if is_main_process():\n            writer.add_scalar" in code
    assert "if is_main_process():\n        save(\"m.pt\")" in code


def test_save_then_reload_waits_for_the_file_and_loads_onto_the_local_device():
    code, _ = run(script(tail="""
        torch.save(model.state_dict(), "m.pt")
        state = torch.load("m.pt", weights_only=True)
        """))
    assert "torch.save(model.module.state_dict(), tmp_path)\nbarrier()\n" in code
    assert 'torch.load("m.pt", weights_only=True, map_location=local_device())' in code


def test_a_forward_inside_a_guarded_write_bypasses_ddp():
    code, _ = run(script(tail="""
        torch.save(model(torch.randn(1, 2)), "sample.pt")
        def dump():
            out = model(torch.randn(1, 2))
            torch.save(out, "dump.pt")
        dump()
        """))
    assert 'torch.save(model.module(torch.randn(1, 2)), tmp_path)' in code
    assert "    out = model(torch.randn(1, 2))\n    if is_main_process():\n        with atomic_write(\"dump.pt\")" in code


def test_a_write_block_that_computes_what_follows_is_not_hidden_from_other_processes():
    code, changes = run(script(tail="""
        import json
        with open("vocab.json", "w") as f:
            vocab = sorted(set("abc"))
            json.dump(vocab, f)
        print(len(vocab))
        torch.save(model, "whole.pt")
        """))
    assert "is_main_process():\n    with open" not in code
    assert "# TODO(ddpify): every process writes this file, because the block also sets `vocab`" in code
    assert 'with atomic_write("whole.pt") as tmp_path:\n        torch.save(model.module, tmp_path)' in code


def test_a_helper_that_writes_inside_a_with_block_is_guarded_where_it_is_called():
    """A real script's shape (sweep): `def dump(...): with open(...) as f: ...` called per epoch."""
    code, _ = run(script(tail='    dump([epoch], "log.txt")\n'
                                'def dump(values, name):\n    with open(name, "w") as f:\n        f.write(str(values))\n'))
    assert '    if is_main_process():\n        dump([epoch], "log.txt")' in code


def test_a_save_through_a_file_handle_that_is_read_back_is_followed_by_a_barrier():
    """A real script's shape (sweep, word_language_model): `with open(path, "wb") as f:
    torch.save(model, f)` each epoch, loaded back through a handle after training."""
    code, _ = run(script(tail='    with open("m.pt", "wb") as f:\n        torch.save(model, f)\n'
                              'with open("m.pt", "rb") as f:\n    model = torch.load(f)\n'))
    assert '    if is_main_process():\n        with open("m.pt", "wb") as f:\n' \
           '            torch.save(model.module, f)\n    barrier()\n' in code


# --- --strategy fsdp: gathers and forwards are collectives, run before the guard -----------------

FSDP_ALSO = frozenset({"wrap-model", "unwrap-model"})


def _fsdp(code: str) -> str:
    from tests.support.snippets import only

    return only(NAME, code, FSDP_ALSO, strategy="fsdp")


def test_fsdp_gathers_run_on_every_process_before_one_guarded_block_of_writes():
    code = _fsdp(IMPORTS + LOADER + MODEL + EPOCHS + "    # checkpoint\n" + WRITES)
    assert code.endswith("""\
    # checkpoint
    model_state = full_state_dict(model)
    if is_main_process():
        with atomic_write("m.pt") as tmp_path:
            torch.save(model_state, tmp_path)
        with open("log.txt", "a") as f:
            f.write(f"{epoch}\\n")
""")


def test_fsdp_an_if_that_only_saves_keeps_its_condition_and_guards_the_write_inside():
    code = _fsdp(IMPORTS + LOADER + MODEL + EPOCHS + "if save:\n    torch.save(model.state_dict(), 'm.pt')\n")
    assert code.endswith("""\
if save:
    model_state = full_state_dict(model)
    if is_main_process():
        with atomic_write('m.pt') as tmp_path:
            torch.save(model_state, tmp_path)
""")


def test_fsdp_a_forward_inside_a_write_runs_everywhere_and_names_do_not_clash():
    code = _fsdp(IMPORTS + LOADER + MODEL + EPOCHS + "model_output = 1\ntorch.save(model(x), 'sample.pt')\n")
    assert code.endswith("""\
model_output = 1
model_output_2 = model(x)
if is_main_process():
    with atomic_write('sample.pt') as tmp_path:
        torch.save(model_output_2, tmp_path)
""")


def test_fsdp_a_helper_that_gathers_is_guarded_inside_not_where_it_is_called():
    helper = "def save_checkpoint(model, path):\n    torch.save(model.state_dict(), path)\n\n\n"
    code = _fsdp(IMPORTS + helper + LOADER + MODEL + EPOCHS + "save_checkpoint(model, 'm.pt')\n")
    assert """\
def save_checkpoint(model, path):
    model_state = full_state_dict(model)
    if is_main_process():
        with atomic_write(path) as tmp_path:
            torch.save(model_state, tmp_path)
""" in code
    assert code.endswith("\nsave_checkpoint(model, 'm.pt')\n")


def test_fsdp_a_gather_that_reads_what_the_write_binds_gets_a_todo():
    code = _fsdp(IMPORTS + LOADER + MODEL + EPOCHS
                 + "with open('w.txt', 'w') as f:\n    f.write(str(model(torch.ones(len(f.name), 2))))\n")
    assert "# TODO(ddpify): `model(torch.ones(len(f.name), 2))` is a collective under FSDP2" in code
