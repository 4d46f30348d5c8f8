"""Each rewrite on small snippets: what it changes, what it must leave alone, what it warns about."""

from __future__ import annotations

import textwrap

import pytest

from ddpify.convert import Options, convert
from ddpify.report import NOTE, WARNING

TRAIN_LOOP = """
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
"""

HEADER = """
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
"""


def run(code: str, **options):
    result = convert(textwrap.dedent(code), Options(**options))
    compile(result.code, "<converted>", "exec")
    return result.code, result.changes


def script(loader: str = "train_loader = DataLoader(ds, batch_size=4, shuffle=True)",
           model: str = "model = torch.nn.Linear(2, 1)",
           optimizer: str = "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
           loop: str = TRAIN_LOOP, tail: str = "") -> str:
    return HEADER + "\n".join([loader, model, optimizer]) + "\n" + textwrap.dedent(loop) + textwrap.dedent(tail)


def warnings(changes) -> list[str]:
    return [c.message for c in changes if c.kind == WARNING]


# --- gates -------------------------------------------------------------------------------------

@pytest.mark.parametrize("code, reason", [
    ("import torch.distributed as dist\ndist.init_process_group('gloo')\n" + script(), "already distributed"),
    ("from ddpify_runtime import init_distributed_mode\n" + script(), "already converted"),
    ("import torch\nmodel = torch.nn.Linear(2, 1)\nprint(model(torch.randn(1, 2)))\n", "no training loop"),
])
def test_files_left_alone_are_byte_identical_with_a_note(code, reason):
    result = convert(code)
    assert not result.changed
    assert [c.kind for c in result.changes] == [NOTE] and reason in result.changes[0].message


# --- launcher-arg and init-distributed ---------------------------------------------------------

def test_argparse_gets_both_launcher_spellings_and_init_follows_parsing():
    body = "parser = argparse.ArgumentParser()\nargs = parser.parse_args()\n" + script()
    code, _ = run("import argparse\ndef main():\n" + textwrap.indent(body, "    ")
                  + "\nif __name__ == '__main__':\n    main()\n")
    assert '"--local-rank", "--local_rank"' in code
    assert "args = parser.parse_args()\n    init_distributed_mode()\n" in code


def test_a_parser_with_one_spelling_gets_the_other_under_the_same_dest():
    code, _ = run("import argparse\np = argparse.ArgumentParser()\np.add_argument('--local_rank', type=int)\n"
                  "args = p.parse_args()\n" + script())
    assert 'p.add_argument("--local-rank", dest="local_rank"' in code


def test_parse_args_helper_puts_init_after_its_call_site():
    code, _ = run("import argparse\ndef parse_args():\n    parser = argparse.ArgumentParser()\n"
                  "    return parser.parse_args()\nargs = parse_args()\n" + script())
    assert "    return parser.parse_args()\nargs = parse_args()\ninit_distributed_mode()\n" in code


def test_without_argparse_init_goes_first_in_main_and_no_launcher_argument():
    code, _ = run("def main():\n    \"\"\"Train.\"\"\"\n" + textwrap.indent(script(), "    ")
                  + "\nif __name__ == '__main__':\n    main()\n")
    assert '"""Train."""\n    init_distributed_mode()\n' in code
    assert "--local-rank" not in code


def test_top_level_script_initialises_after_the_imports():
    code, _ = run(script())
    assert code.index("init_distributed_mode()\n") < code.index("ds = TensorDataset")


# --- local-device ------------------------------------------------------------------------------

def test_hard_coded_gpu_zero_becomes_the_local_gpu():
    code, _ = run(script(model="""
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
gpu = 0 if torch.cuda.is_available() else "cpu"
other = torch.device("cuda", 0)
model = torch.nn.Linear(2, 1).cuda(0)"""))
    assert '"cuda:0"' not in code and 'torch.device("cuda" if' in code
    assert 'gpu = local_rank() if torch.cuda.is_available() else "cpu"' in code
    assert 'torch.device("cuda")' in code and ".cuda()" in code


# --- shard-data --------------------------------------------------------------------------------

@pytest.mark.parametrize("shuffle, sampler", [
    ("shuffle=True", "sampler=DistributedSampler(ds, shuffle=True)"),
    ("shuffle=args_shuffle", "sampler=DistributedSampler(ds, shuffle=args_shuffle)"),
    ("drop_last=True", "drop_last=True, sampler=DistributedSampler(ds, shuffle=False)"),
])
def test_shuffle_moves_into_the_sampler_with_its_original_value(shuffle, sampler):
    code, _ = run("args_shuffle = True\n" + script(loader=f"train_loader = DataLoader(ds, batch_size=4, {shuffle})"))
    assert f"DataLoader(ds, batch_size=4, {sampler})" in code


def test_evaluation_loaders_stay_whole():
    code, _ = run(script(tail="""
        val_loader = DataLoader(ds, batch_size=4)
        test_loader = DataLoader(ds, batch_size=4, shuffle=False)
        for x, y in val_loader:
            print(model(x))
        """))
    assert "val_loader = DataLoader(ds, batch_size=4)\n" in code
    assert "test_loader = DataLoader(ds, batch_size=4, shuffle=False)\n" in code


def test_opaque_loader_arguments_go_through_shard_loader():
    code, _ = run(script(loader="kw = {'batch_size': 4}\nkw.update(shuffle=True)\ntrain_loader = DataLoader(ds, **kw)"))
    assert "train_loader = DataLoader(ds, **kw)\ntrain_loader = shard_loader(train_loader)\n" in code


@pytest.mark.parametrize("sampler, expected", [
    ("RandomSampler(ds)", "DistributedSampler(ds)"),
    ("SequentialSampler(ds)", "DistributedSampler(ds, shuffle=False)"),
    ("WeightedRandomSampler([1.0] * 8, 8)", "ShardedSampler(WeightedRandomSampler([1.0] * 8, 8))"),
])
def test_explicit_samplers_are_replaced_or_sharded(sampler, expected):
    code, _ = run("from torch.utils.data import RandomSampler, SequentialSampler, WeightedRandomSampler\n"
                  + script(loader=f"s = {sampler}\ntrain_loader = DataLoader(ds, batch_size=4, sampler=s)"))
    assert f"s = {expected}\n" in code


def test_batch_sampler_keeps_its_batching_around_a_distributed_sampler():
    code, _ = run("from torch.utils.data import BatchSampler, RandomSampler\n" + script(
        loader="bs = BatchSampler(RandomSampler(ds), 4, drop_last=True)\n"
               "train_loader = DataLoader(ds, batch_sampler=bs)"))
    assert "bs = BatchSampler(DistributedSampler(ds), 4, drop_last=True)" in code
    assert "DataLoader(ds, batch_sampler=bs)" in code


def test_iterable_dataset_and_manual_batching_get_a_todo_and_a_warning():
    code, changes = run("""
        import torch
        from torch.utils.data import DataLoader, IterableDataset
        class Stream(IterableDataset):
            def __iter__(self):
                yield torch.randn(2)
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(Stream(), batch_size=2)
        X = torch.randn(8, 2)
        for epoch in range(2):
            for x in loader:
                model(x).sum().backward()
            for i in range(0, 8, 4):
                model(X[i:i + 4]).sum().backward()
        """)
    assert code.count("# TODO(ddpify):") == 2
    assert any("IterableDataset" in w for w in warnings(changes))
    assert any("sliced by hand" in w for w in warnings(changes))


def test_per_process_batch_size_is_said_once():
    _, changes = run(script(tail="extra = DataLoader(ds, batch_size=2, shuffle=True)\n"
                                 "for x, y in extra:\n    model(x).sum().backward()\n"))
    assert sum("per process" in w for w in warnings(changes)) == 1


# --- wrap-model and unwrap-model ---------------------------------------------------------------

def test_frozen_and_loss_only_modules_are_not_wrapped():
    code, _ = run(script(model="teacher = torch.nn.Linear(2, 1)\nteacher.requires_grad_(False)\n"
                               "model = torch.nn.Linear(2, 1)"))
    assert "teacher = DistributedDataParallel" not in code
    assert "model = DistributedDataParallel(model, device_ids=device_ids(model))" in code


def test_wrap_follows_set_up_and_precedes_compile():
    code, _ = run(script(model="""
model = torch.nn.Linear(2, 1)
model.load_state_dict(torch.load("init.pt"))
raw_model = model
model = torch.compile(model)"""))
    assert code.index("raw_model = model") < code.index("model = DistributedDataParallel") \
        < code.index("model = torch.compile(model)")


def test_model_moved_under_a_condition_is_wrapped_on_every_path():
    code, _ = run(script(model="model = torch.nn.Linear(2, 1)\nif torch.cuda.is_available():\n    model = model.cuda()"))
    assert "    model = model.cuda()\nmodel = DistributedDataParallel" in code


def test_dataparallel_is_replaced_and_module_access_before_the_wrap_is_unwrapped():
    code, changes = run(script(model="""
model = torch.nn.DataParallel(torch.nn.Linear(2, 1))
if torch.cuda.is_available():
    model.cuda()
model.module.weight.requires_grad_(False)"""))
    assert "DataParallel(" not in code.replace("DistributedDataParallel(", "")
    assert "model = torch.nn.Linear(2, 1)" in code
    assert "\nmodel.weight.requires_grad_(False)\nmodel = DistributedDataParallel" in code
    assert any("DataParallel split each batch" in w for w in warnings(changes))


def test_custom_attributes_and_state_dicts_go_through_module_but_module_api_does_not():
    code, _ = run(script(tail="""
        model.train()
        print(model.custom_scale, model.parameters())
        torch.save(model.state_dict(), "m.pt")
        model = torch.nn.Linear(2, 1)
        model.load_state_dict(torch.load("m.pt"))
        """))
    assert "model.module.custom_scale" in code and "model.train()" in code and "model.parameters()" in code
    assert "model.module.state_dict()" in code
    assert "model.load_state_dict(torch.load" in code, "a model rebound after training is a plain module"


def test_untraceable_optimizer_gets_a_todo():
    code, changes = run(script(optimizer="optimizer = torch.optim.SGD(get_params(), lr=0.1)"))
    assert "# TODO(ddpify): could not tell which model this optimizer trains" in code
    assert "model = DistributedDataParallel(model" not in code


@pytest.mark.parametrize("flag, text", [
    ({"find_unused_parameters": True}, "device_ids=device_ids(model), find_unused_parameters=True)"),
    ({"sync_batchnorm": True}, "model = convert_sync_batchnorm(model)\nmodel = DistributedDataParallel"),
])
def test_wrap_options(flag, text):
    code, _ = run(script(), **flag)
    assert text in code


# --- set-epoch, agree-stop, accumulate-no-sync -------------------------------------------------

def test_set_epoch_names_the_loader_as_the_epoch_loop_sees_it():
    code, _ = run(HEADER + """
train_loader = DataLoader(ds, batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def train_one(loader):
    for x, y in loader:
        loss_fn(model(x), y).backward()
step = 0
while step < 10:
    train_one(train_loader)
    step += 1
""")
    assert "while step < 10:\n    set_epoch(train_loader, step)\n" in code
    assert "    step += 1\n    barrier()\n" in code


def test_loader_without_epoch_loop_gets_a_todo():
    """A batch loop in a function this file never calls may run once per epoch of its caller."""
    loop = "def train_epoch():\n    for x, y in train_loader:\n        loss_fn(model(x), y).backward()\n"
    code, changes = run(script(loop=loop))
    assert any("no epoch loop found" in w for w in warnings(changes))


def test_loader_read_in_one_pass_needs_no_set_epoch():
    code, changes = run(script(loop="for x, y in train_loader:\n    loss_fn(model(x), y).backward()\n"))
    assert "DistributedSampler(ds, shuffle=True)" in code
    assert "set_epoch" not in code and not any("epoch" in w for w in warnings(changes))


def test_early_stop_is_agreed_across_processes():
    code, _ = run(script(loop=TRAIN_LOOP + "    if loss_fn(model(x), y) < 0.1:\n        break\n"))
    assert "if agree_on(loss_fn(model(x), y) < 0.1):" in code


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


# --- main-process-only, load-map-location ------------------------------------------------------

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
    assert "if is_main_process():\n    torch.save(model.module.state_dict(), \"a.pt\")\n    with open" in code


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
    assert "torch.save(model.module.state_dict(), \"m.pt\")\nbarrier()\n" in code
    assert 'torch.load("m.pt", weights_only=True, map_location=local_device())' in code


def test_only_and_skip_select_rewrites():
    only, _ = run(script(), only=frozenset({"wrap-model"}))
    assert "DistributedDataParallel(model" in only and "init_distributed_mode" not in only
    skipped, _ = run(script(), skip=frozenset({"wrap-model"}))
    assert "DistributedDataParallel(model" not in skipped and "init_distributed_mode()" in skipped


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


def test_a_forward_inside_a_guarded_write_bypasses_ddp():
    code, _ = run(script(tail="""
        torch.save(model(torch.randn(1, 2)), "sample.pt")
        def dump():
            out = model(torch.randn(1, 2))
            torch.save(out, "dump.pt")
        dump()
        """))
    assert 'torch.save(model.module(torch.randn(1, 2)), "sample.pt")' in code
    assert "    out = model(torch.randn(1, 2))\n    if is_main_process():\n        torch.save(out" in code


def test_a_shard_sum_divided_by_the_full_dataset_size_gets_a_todo():
    code, changes = run(script(loop="""
for epoch in range(3):
    correct = 0
    for x, y in train_loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        correct += (model(x) > 0).sum().item()
    accuracy = correct / len(train_loader.dataset)
    batches = correct / len(train_loader)
"""))
    assert code.count("# TODO(ddpify): `correct` sums this process's shard only") == 1
    assert any("divided by the full dataset size" in w for w in warnings(changes))


@pytest.mark.parametrize("guard", ["if torch.cuda.device_count() > 1:\n", "if torch.cuda.device_count() > 1:\n    print('GPUs')\n"])
def test_dataparallel_under_a_gpu_count_check_becomes_an_unconditional_wrap(guard):
    code, _ = run(script(model="model = torch.nn.Linear(2, 1)\n" + guard + "    model = torch.nn.DataParallel(model)"))
    assert "model = model" not in code and "torch.nn.DataParallel" not in code
    assert code.count("DistributedDataParallel(model") == 1
    assert "\nmodel = DistributedDataParallel(model, device_ids=device_ids(model))\n" in code


@pytest.mark.parametrize("framework", ["from accelerate import Accelerator", "import deepspeed",
                                       "import horovod.torch as hvd", "import lightning as L"])
def test_scripts_distributed_by_a_framework_are_left_alone(framework):
    result = convert(framework + "\n" + script())
    assert not result.changed and "distributed by" in result.changes[0].message


def test_model_named_after_an_argument_attribute_is_still_wrapped():
    code, _ = run("import argparse\nargs = argparse.ArgumentParser().parse_args()\n"
                  + script(model="model = make(args.model, pretrained=True)"))
    assert "model = DistributedDataParallel(model, device_ids=device_ids(model))" in code


def test_configure_optimizers_and_hand_written_sgd_count_as_training_the_model():
    code, _ = run(script(optimizer="optimizer = model.configure_optimizers(0.1)"))
    assert "model = DistributedDataParallel(model" in code
    code, _ = run(script(optimizer="", loop="""
for epoch in range(3):
    for x, y in train_loader:
        loss_fn(model(x), y).backward()
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-0.1)
"""))
    assert "model = DistributedDataParallel(model" in code


def test_an_optimizer_over_part_of_a_model_needs_find_unused_parameters():
    code, changes = run(script(optimizer="optimizer = torch.optim.SGD(model.fc.parameters(), lr=0.1)"))
    assert "device_ids=device_ids(model), find_unused_parameters=True)" in code
    assert any("trains only parts of `model`" in w for w in warnings(changes))


def test_without_a_wrapped_model_the_data_stays_whole():
    code, _ = run(script(optimizer="optimizer = torch.optim.SGD(get_params(), lr=0.1)"))
    assert "DistributedSampler" not in code and "shard_loader" not in code
    assert "leaves the training data whole too" in code


def test_bare_device_index_zero_becomes_the_local_rank():
    code, _ = run(script(model="device = 0\nmodel = torch.nn.Linear(2, 1).to(0)"))
    assert "device = local_rank()" in code and ".to(local_rank())" in code


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
    assert 'torch.save(model.module, "whole.pt")' in code


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


def test_pinned_gpus_and_library_modules_get_todos():
    code, changes = run("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n" + script())
    assert "# TODO(ddpify): CUDA_VISIBLE_DEVICES set here" in code
    library = HEADER + "def fit(model, train_loader):\n" + textwrap.indent(
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n" + textwrap.dedent(TRAIN_LOOP), "    ")
    code, _ = run(library)
    assert "init_distributed_mode()\n" not in code and "runs nothing when imported" in code


def test_a_parser_built_by_a_helper_gets_the_launcher_argument_and_init_follows_parsing():
    code, _ = run("import argparse\ndef get_parser():\n    parser = argparse.ArgumentParser()\n    return parser\n"
                  "opts = get_parser().parse_args()\n" + script())
    assert '    parser.add_argument("--local-rank", "--local_rank"' in code
    assert "opts = get_parser().parse_args()\ninit_distributed_mode()\n" in code


def test_dataset_downloads_run_on_the_first_process_of_each_node_first():
    code, _ = run("from torchvision import datasets\n" + script(
        loader="ds = datasets.MNIST('data', train=True, download=True)\n"
               "val = datasets.MNIST('data', train=False, download=True)\n"
               "train_loader = DataLoader(ds, batch_size=4, shuffle=True)"))
    assert ("with main_process_first():\n    ds = datasets.MNIST('data', train=True, download=True)\n"
            "    val = datasets.MNIST('data', train=False, download=True)\n") in code


def test_two_functions_each_training_their_own_model_wrap_both():
    body = textwrap.indent(script(), "    ")
    code, _ = run("def main_a():\n" + body + "\ndef main_b():\n" + body)
    assert code.count("model = DistributedDataParallel(model, device_ids=device_ids(model))") == 2


def test_a_module_that_runs_in_training_without_an_optimizer_is_reported_not_wrapped():
    _, changes = run(script(model="teacher = torch.nn.Linear(2, 1).to('cpu')\n"
                                  "criterion = torch.nn.MSELoss().to('cpu')\nmodel = torch.nn.Linear(2, 1)",
                            loop=TRAIN_LOOP.replace("loss_fn(model(x), y)", "criterion(model(x), teacher(x))")))
    assert [w for w in warnings(changes) if "no optimizer trains it" in w] == [
        "`teacher` runs in training but no optimizer trains it: left unwrapped (right for a frozen or "
        "loss-only module; wrap it if it should learn)"]
