"""Whole-script behaviour across rewrites: files left alone, rewrite selection."""

from __future__ import annotations

import libcst as cst
import pytest

from ddpify.convert import convert, convert_program
from ddpify.inputs.program import load
from ddpify.output.report import NOTE, WARNING
from tests.support.snippets import run, script


@pytest.mark.parametrize("code, reason", [
    ("import torch.distributed as dist\ndist.init_process_group('gloo')\n" + script(), "already distributed"),
    ("from ddpify_runtime import init_distributed_mode\n" + script(), "already converted"),
    ("import torch\nmodel = torch.nn.Linear(2, 1)\nprint(model(torch.randn(1, 2)))\n", "no training loop"),
])
def test_files_left_alone_are_byte_identical_with_a_note(code, reason):
    result = convert(code)
    assert not result.changed
    assert [c.kind for c in result.changes] == [NOTE] and reason in result.changes[0].message


UNGROUPED = """import torch
import torch.distributed as dist
model = torch.nn.Linear(2, 1)
if world_size > 1:
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(4, 2)).sum()
loss.backward()
opt.step()
"""


def test_a_script_with_ddp_code_that_never_joins_a_process_group_is_converted():
    """DDP without `init_process_group` (Lyken17/PyTorch-Template's `--world-size > 1` branch): it was
    "already distributed" and left alone, and under torchrun each process trained alone. Now it is
    no distributed script (`distributed.joins_group`): converted, the runtime joins the group, and
    its own wrap of the model is replaced by the one wrap after the set-up (two would nest)."""
    result = convert(UNGROUPED)
    assert result.changed and 'init_distributed_mode(backend="gloo")' in result.code
    assert result.code.count("DistributedDataParallel(") == 1 and "if world_size > 1" not in result.code
    assert [c.line for c in result.changes if "own DistributedDataParallel" in c.message] == [5]


def test_a_module_that_wraps_without_a_process_group_is_converted_with_the_program(tmp_path):
    """The program's DDP wrap in a module of its own: dropped there, the model wrapped once in the entry."""
    (tmp_path / "trainer.py").write_text("import torch\nimport torch.distributed as dist\ndef wrap(model):\n"
                                         "    if world_size > 1:\n"
                                         "        model = torch.nn.parallel.DistributedDataParallel(model)\n"
                                         "    return model\n")
    entry = tmp_path / "train.py"
    entry.write_text("import torch\nfrom trainer import wrap\nmodel = wrap(torch.nn.Linear(2, 1))\n"
                     "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel(torch.randn(4, 2)).sum().backward()\n"
                     "opt.step()\n")
    result = convert_program(load(entry, entry.read_bytes()))
    assert 'init_distributed_mode(backend="gloo")' in result.code and "model = DistributedDataParallel(model" in result.code
    assert "DistributedDataParallel" not in result.modules["trainer.py"].code


@pytest.mark.parametrize("join", ["dist.init_process_group('nccl')\n", "init_distributed_mode(args)\n",
                                  "utils.setup_ddp(rank)\n"])
def test_a_distributed_script_that_joins_a_group_has_only_the_note(join):
    result = convert(UNGROUPED + join)
    assert [c.kind for c in result.changes] == [NOTE] and "already distributed" in result.changes[0].message


def test_training_behind_an_unread_star_import_is_a_warning_not_a_silent_note(tmp_path):
    """`from utils import *` of a module not read (torch and the optimizer come through it): the
    `.backward()` and `.step()` the file calls are named, not passed over in a note."""
    (tmp_path / "model.py").write_text("from utils import *\n\ndef build():\n    return Net()\n")
    entry = tmp_path / "train.py"
    entry.write_text("from utils import *\nfrom model import *\nmodel = build()\n"
                     "opt = optim.Adam(model.parameters())\nfor x in data:\n"
                     "    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n")
    result = convert(entry.read_text())
    assert not result.changed
    assert [(c.kind, c.line) for c in result.changes] == [(NOTE, 1), (WARNING, 7)]
    assert "`loss.backward()` and `.step()`" in result.changes[1].message
    assert "torch is not imported" in result.changes[0].message  # not "no .backward()" beside it
    program = convert_program(load(entry, entry.read_bytes()))  # the program says where: the star import
    assert not program.changed
    assert [(c.kind, c.line) for c in program.changes] == [(NOTE, 1), (WARNING, 1), (WARNING, 7)]
    assert program.changes[1].message.startswith("`from utils import *`: ddpify found no module `utils`")
    assert [(c.kind, c.line) for c in program.modules["model.py"].changes] == [(WARNING, 1)]


@pytest.mark.parametrize("imported, warned", [('"statistics"', False), ('"os.path"', False), ('"torchvision"', False),
                                               ('"mymodels"', True), ("name", True)])
def test_a_module_imported_by_a_name_written_out_of_the_standard_library_loads_no_training_code(
        imported, warned, tmp_path):
    """25c's VAE (decision 0206): `__import__("statistics").NormalDist(mean, std).inv_cdf(p)` was
    warned of as code loaded by name that ddpify does not follow; a module of the standard library
    or of a package that runs no training loop is none. Near misses: a module of no such package,
    a name not written out (warned, as before)."""
    entry = tmp_path / "train.py"
    entry.write_text(script() + f"name = 'x'\nmodule = __import__({imported})\n")
    changes = convert_program(load(entry, entry.read_bytes())).changes
    assert any("loads code by name" in c.message for c in changes) is warned


def test_only_and_skip_select_rewrites():
    only, _ = run(script(), only=frozenset({"wrap-model"}))
    assert "DistributedDataParallel(model" in only and "init_distributed_mode" not in only
    skipped, _ = run(script(), skip=frozenset({"wrap-model"}))
    assert "DistributedDataParallel(model" not in skipped and 'init_distributed_mode(backend="gloo")' in skipped


@pytest.mark.parametrize("framework", ["from accelerate import Accelerator", "import deepspeed",
                                       "import horovod.torch as hvd", "import lightning as L",
                                       "from accelerate import Accelerator\naccelerator = Accelerator()"])
def test_scripts_distributed_by_a_framework_are_left_alone(framework):
    result = convert(framework + "\n" + script())
    assert not result.changed and "distributed by" in result.changes[0].message


# ---- the runtime's import: wrapped as a person writes it, and one line where it is missing ----

RUNTIME_IMPORT = '''\
try:
    from ddpify_runtime import (
        atomic_write, device_ids, end_epoch, init_distributed_mode,
        is_main_process, set_epoch,
    )
except ModuleNotFoundError as exc:  # ddpify_runtime or torch not installed
    raise SystemExit(f"{exc}: pip install 'ddpify[torch]', "
                     "or convert with --vendor-runtime") from None
'''
SAVING_SCRIPT = script(loop="""
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    torch.save(model.state_dict(), "m.pt")
""")


def test_the_runtime_import_is_wrapped_within_79_columns_after_the_other_imports():
    code = convert(SAVING_SCRIPT).code
    start = code.index("try:\n")
    assert code[start:start + len(RUNTIME_IMPORT)] == RUNTIME_IMPORT
    assert code[:start].endswith("from torch.utils.data.distributed import DistributedSampler\n")
    assert max(len(line) for line in RUNTIME_IMPORT.splitlines()) <= 79


def test_a_short_runtime_import_stays_on_one_line():
    code = convert(script(loop="""
for x, y in train_loader:
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
""")).code
    assert "try:\n    from ddpify_runtime import device_ids, init_distributed_mode\nexcept" in code


HELPERS = ["atomic_write", "device_ids as ddpify_device_ids", "end_epoch", "init_distributed_mode",
           "is_main_process", "reduce_sum", "set_epoch", "shard_loader", "sum_over_shards_of_the_epoch_loss"]


@pytest.mark.parametrize("indent", ["    ", "  ", "\t"])
@pytest.mark.parametrize("module", ["ddpify_runtime", "torch.nn.parallel", "torch.utils.data.distributed"])
@pytest.mark.parametrize("count", [1, 2, 5, 9])
def test_an_added_import_is_the_tree_libcst_reads_from_its_text(indent, module, count):
    """The imports are built as nodes (decision 0145): the same nodes LibCST's parser gives for
    their text, so a file converted again, and every tool reading the tree, sees what it would
    have parsed; within 79 columns unless one name alone is longer."""
    from ddpify.output.edits import _import
    names = sorted(HELPERS[:count])
    node = _import(indent, module, names)
    text = cst.parse_module(f"if x:\n{indent}pass\n").code_for_node(node)
    assert node.deep_equals(cst.parse_statement(text))
    assert f"from {module} import" in text and all(name in text for name in names)
    assert max(len(line.expandtabs(len(indent))) for line in text.splitlines()) <= 79


def test_a_wrapped_runtime_import_in_a_tab_indented_file_indents_with_tabs():
    from ddpify.output.edits import _import
    text = cst.parse_module("if x:\n\tpass\n").code_for_node(_import("\t", "ddpify_runtime", sorted(HELPERS)))
    assert text.startswith("try:\n\tfrom ddpify_runtime import (\n\t\tatomic_write, device_ids as ddpify_device_ids,")
    assert "\n\t)\nexcept ModuleNotFoundError as exc:  # ddpify_runtime or torch not installed\n" \
        "\traise SystemExit(f\"{exc}: pip install 'ddpify[torch]', \"\n" in text


def test_a_converted_script_without_the_runtime_fails_in_one_line_naming_both_fixes(tmp_path):
    import subprocess
    import sys
    (tmp_path / "train_ddp.py").write_text(convert(SAVING_SCRIPT).code)
    block = ("import runpy, sys\n"
             "class NoRuntime:  # as where ddpify_runtime is not installed\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'ddpify_runtime':\n"
             "            raise ModuleNotFoundError(\"No module named 'ddpify_runtime'\", name=name)\n"
             "sys.meta_path.insert(0, NoRuntime())\n"
             "runpy.run_path('train_ddp.py', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == ("No module named 'ddpify_runtime': pip install 'ddpify[torch]', "
                           "or convert with --vendor-runtime\n")


def test_a_model_stepped_by_an_optimizer_class_of_the_program_is_wrapped():
    """`SAM(model.parameters(), torch.optim.SGD)` with `class SAM(torch.optim.Optimizer)` (davda54/sam's
    shape): an optimizer, so the model it steps is wrapped and the loader it trains on sharded."""
    result = convert(script(model="""\
class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, **kwargs):
        super().__init__(params, dict(**kwargs))
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)

    def step(self, closure=None):
        self.base_optimizer.step()

model = torch.nn.Linear(2, 1)
""", optimizer="optimizer = SAM(model.parameters(), torch.optim.SGD, lr=0.1)"))
    assert "DistributedDataParallel(model" in result.code and "DistributedSampler" in result.code


def test_a_module_level_dataparallel_replaced_where_the_process_group_starts_converts():
    """A script with no function whose first model is `policy = nn.DataParallel(Net())`: the
    process group starts right before that statement, and the statement itself is replaced by
    two (`policy = Net()` and its wrap). The walk that applies the edits was handed the two as one
    sentinel with lines to put around it, and stopped ("internal error in rewrite wrap-model:
    'FlattenSentinel' object has no attribute '_is_removable'")."""
    code = convert(
        "import torch\nimport torch.nn as nn\n\n"
        "policy = nn.DataParallel(nn.Linear(4, 2))\n"
        "optim = torch.optim.SGD(policy.parameters(), lr=0.1)\n"
        "for x in torch.randn(3, 8, 4):\n"
        "    optim.zero_grad()\n    policy(x).sum().backward()\n    optim.step()\n").code
    wrap = "policy = nn.Linear(4, 2)\npolicy = DistributedDataParallel(policy, device_ids=device_ids(policy))\n"
    assert wrap in code and code.index('init_distributed_mode(backend="gloo")\n') < code.index(wrap)


def test_a_file_left_alone_runs_no_analysis(monkeypatch):
    """A file `convert` leaves alone (already distributed, no training loop) is told so from its
    facts: the analyses of what trains (`models.find`, ...) ran first and were thrown away (a third
    of the conversion of the corpus's already_ddp.py)."""
    from ddpify.analysis import models

    monkeypatch.setattr(models, "find", lambda *args, **kwargs: pytest.fail("analysed"))
    for source in ("import torch.distributed as dist\ndist.init_process_group('gloo')\n", "import os\nprint(os.sep)\n"):
        result = convert(source)
        assert not result.changed and result.changes[0].kind == NOTE


ROAD_TRAINER = """\
import torch
import utils


def create_object(module, name, **args):
    return getattr(module, name)(**args)


class BaseTrainer:
    def __init__(self, config, model, train_loader):
        self.model = model
        self.train_loader = train_loader
        params = filter(lambda p: p.requires_grad, self.model.parameters())
        self.optimizer = create_object(utils.optim, config["optimizer"], **{"params": params, "lr": 1e-3})

    def train(self):
        for x, y in self.train_loader:
            self.optimizer.zero_grad()
            torch.nn.functional.mse_loss(self.model(x), y).backward()
            self.optimizer.step()
"""


def test_an_optimizer_built_by_name_from_a_module_that_star_imports_torch_optim_is_wrapped(tmp_path):
    """32c's road segmentation (decision 0268): base/base_trainer.py builds the optimizer the configuration
    names as `create_object(utils.optim, name, params=..., lr=...)`, a helper returning `getattr(module,
    name)(**args)`, where utils/optim.py is `from torch.optim import *` and nothing else; `import utils`
    in that file, while the entry has `from torchvision import transforms, utils` (the program's merged
    imports, the later binding kept, read `utils.optim` as torchvision's). Read by that file's own
    imports, and the module as the torch.optim it re-exports, the optimizer is one: the model it steps is
    wrapped. Near miss: a module of the program that star-imports torch.optim but defines a class of its
    own is no re-export (`Facts.reexported_library`): no optimizer, the warning as before."""
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "__init__.py").write_text("from .optim import *\n")
    (tmp_path / "utils" / "optim.py").write_text("from torch.optim import *\n")
    (tmp_path / "base_trainer.py").write_text(ROAD_TRAINER)
    entry = tmp_path / "train.py"
    entry.write_text("import torch\nfrom torchvision import transforms, utils\nfrom base_trainer import BaseTrainer\n\n"
                     "model = torch.nn.Linear(2, 1)\n"
                     "loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 2), "
                     "torch.randn(8, 1)), batch_size=2, shuffle=True)\n"
                     "BaseTrainer({'optimizer': 'Adam'}, model, loader).train()\n")
    result = convert_program(load(entry, entry.read_bytes()))
    assert "model = DistributedDataParallel(model, device_ids=device_ids(model))" in result.modules["base_trainer.py"].code
    (tmp_path / "utils" / "optim.py").write_text("from torch.optim import *\n\n\nclass Lookahead:\n    pass\n")
    result = convert_program(load(entry, entry.read_bytes()))
    assert "DistributedDataParallel" not in result.modules.get("base_trainer.py", result).code
    assert any("no optimizer is built" in c.message for m in result.modules.values() for c in m.changes)
