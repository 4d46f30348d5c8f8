"""What `ddpify check FILE` reads (decision 0036, `ddpify.inputs.program.load_checked`): a script
with the modules it imports; a module from its package's folder and in the program of a script
that imports it (the one that runs distributed first); the rank questions answered on that
program. Table tests of the question, without the rules."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

from ddpify.check.context import Context
from ddpify.cli import main
from ddpify.inputs.program import load_checked
from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import parse_module


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)


def write(files: dict[str, str]) -> None:
    for path, text in files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(textwrap.dedent(text))


MODULE = "import torch\nclass Trainer:\n    def __init__(self, device_id):\n        self.device_id = device_id\n"
RUNS = "from pkg.trainer import Trainer\nif __name__ == '__main__':\n    Trainer(0)\n"
RUNS_DDP = "import torch.distributed as dist\nfrom pkg.trainer import Trainer\nif __name__ == '__main__':\n" \
           "    dist.init_process_group('nccl')\n    Trainer(dist.get_rank())\n"

# (the files, the file checked, the files its program reads: the checked one first, then by reach)
READS = {
    "script_reads_what_it_imports": ({"train.py": "import utils\nif __name__ == '__main__':\n    utils.f()\n",
                                      "utils.py": "def f():\n    pass\n", "other.py": "import train\n"},
                                     "train.py", ["train.py", "utils.py"]),
    "module_in_the_program_of_its_importer": ({"pkg/__init__.py": "", "pkg/trainer.py": MODULE, "run.py": RUNS},
                                              "pkg/trainer.py", ["pkg/trainer.py", "run.py", "pkg/__init__.py"]),
    "the_importer_that_runs_distributed_first": (
        {"pkg/__init__.py": "", "pkg/trainer.py": MODULE, "a_old.py": RUNS, "b_ddp.py": RUNS_DDP},
        "pkg/trainer.py", ["pkg/trainer.py", "b_ddp.py", "pkg/__init__.py"]),
    "an_importer_whose_group_start_is_commented_out_is_not_the_run": (  # MLNeuronInverter's RayTune.py
        {"pkg/__init__.py": "", "pkg/trainer.py": MODULE, "a_tune.py": "# import torch.distributed as dist\n"
         "# dist.init_process_group('nccl')\n" + RUNS, "b_ddp.py": RUNS_DDP},
        "pkg/trainer.py", ["pkg/trainer.py", "b_ddp.py", "pkg/__init__.py"]),
    "of_two_importers_that_start_the_group_the_first": (
        {"pkg/__init__.py": "", "pkg/trainer.py": MODULE, "a_ddp.py": RUNS_DDP, "b_ddp.py": RUNS_DDP},
        "pkg/trainer.py", ["pkg/trainer.py", "a_ddp.py", "pkg/__init__.py"]),
    "an_importer_in_a_subfolder": ({"pkg/__init__.py": "", "pkg/trainer.py": MODULE, "launch/run.py": RUNS},
                                   "pkg/trainer.py", ["pkg/trainer.py", "launch/run.py", "pkg/__init__.py"]),
    "a_module_of_the_package_is_no_importer": (
        {"pkg/__init__.py": "", "pkg/trainer.py": MODULE, "pkg/loop.py": "from pkg.trainer import Trainer\n"},
        "pkg/trainer.py", ["pkg/trainer.py"]),
    "a_script_that_does_not_reach_it_is_no_importer": (
        {"pkg/__init__.py": "", "pkg/trainer.py": MODULE, "pkg/data.py": "", "run.py": "from pkg import data\n"},
        "pkg/trainer.py", ["pkg/trainer.py"]),
    "absolute_imports_of_a_package_module_resolve_from_its_package_folder": (
        {"pkg/__init__.py": "", "pkg/trainer.py": "import pkg.utils\n", "pkg/utils.py": ""},
        "pkg/trainer.py", ["pkg/trainer.py", "pkg/__init__.py", "pkg/utils.py"]),
    "an_entry_in_a_subfolder_imports_from_the_repository": (
        {"scripts/train.py": "from src.dist import setup\nif __name__ == '__main__':\n    setup()\n",
         "src/__init__.py": "", "src/dist.py": ""},
        "scripts/train.py", ["scripts/train.py", "src/__init__.py", "src/dist.py"]),
    "a_src_layout_package_above_the_entry": (
        {"scripts/train.py": "from pkg.train import loop\nif __name__ == '__main__':\n    loop.run()\n",
         "src/pkg/__init__.py": "", "src/pkg/train/__init__.py": "", "src/pkg/train/loop.py": ""},
        "scripts/train.py", ["scripts/train.py", "src/pkg/__init__.py", "src/pkg/train/__init__.py",
                             "src/pkg/train/loop.py"]),
    "beside_the_entry_first": (
        {"scripts/train.py": "from src.dist import setup\nif __name__ == '__main__':\n    setup()\n",
         "scripts/src/__init__.py": "", "scripts/src/dist.py": "", "src/__init__.py": "", "src/dist.py": ""},
        "scripts/train.py", ["scripts/train.py", "scripts/src/__init__.py", "scripts/src/dist.py"]),
    "a_lone_module_above_is_taken": (  # seq2seq-pytorch: `from utils import *` run with PYTHONPATH=.
        {"scripts/train.py": "from utils import *\nif __name__ == '__main__':\n    f()\n", "utils.py": ""},
        "scripts/train.py", ["scripts/train.py", "utils.py"]),
    "a_lone_module_above_named_as_pythons_own_is_not_taken": (
        {"scripts/train.py": "import json, pytest\nif __name__ == '__main__':\n    json.f()\n", "json.py": "",
         "pytest.py": ""},
        "scripts/train.py", ["scripts/train.py"]),
    "not_past_the_repository": (
        {"repo/.git/HEAD": "", "repo/scripts/train.py": "from src.dist import setup\nif __name__ == '__main__':\n"
         "    setup()\n", "src/__init__.py": "", "src/dist.py": ""},
        "repo/scripts/train.py", ["repo/scripts/train.py"]),
    "a_folder_an_imported_module_puts_on_sys_path_through_its_helper": (  # DEKR's `_init_paths.py`
        {"tools/train.py": "import _init_paths\nfrom dataset import make\nif __name__ == '__main__':\n    make()\n",
         "tools/_init_paths.py": "import os.path as osp\nimport sys\ndef add_path(path):\n    sys.path.insert(0, path)\n"
                                 "this_dir = osp.dirname(__file__)\nlib_path = osp.join(this_dir, '..', 'lib')\n"
                                 "add_path(lib_path)\n",
         "lib/dataset/__init__.py": "def make():\n    pass\n"},
        "tools/train.py", ["tools/train.py", "tools/_init_paths.py", "lib/dataset/__init__.py"]),
    "a_folder_computed_from_the_files_parent_on_sys_path": (
        {"tools/train.py": "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname("
                           "os.path.abspath(__file__))), 'lib'))\nimport helper\nif __name__ == '__main__':\n"
                           "    helper.f()\n", "lib/helper.py": ""},
        "tools/train.py", ["tools/train.py", "lib/helper.py"]),
    "a_pathlib_folder_on_sys_path": (
        {"tools/train.py": "import sys\nfrom pathlib import Path\nROOT = Path(__file__).resolve().parents[1]\n"
                           "sys.path.append(str(ROOT / 'lib'))\nimport helper\nif __name__ == '__main__':\n"
                           "    helper.f()\n", "lib/helper.py": ""},
        "tools/train.py", ["tools/train.py", "lib/helper.py"]),
    "the_run_folder_on_sys_path": (
        {"tools/train.py": "import os, sys\nsys.path.append(os.path.join(os.getcwd(), 'lib'))\nimport helper\n"
                           "if __name__ == '__main__':\n    helper.f()\n", "tools/lib/helper.py": ""},
        "tools/train.py", ["tools/train.py", "tools/lib/helper.py"]),
    "a_module_of_a_namespace_package_in_its_importers_program": (  # wespeaker: no ns/__init__.py
        {"ns/utils/__init__.py": "", "ns/utils/checkpoint.py": MODULE, "ns/bin/train.py":
         "from ns.utils.checkpoint import Trainer\nif __name__ == '__main__':\n    Trainer(0)\n"},
        "ns/utils/checkpoint.py", ["ns/utils/checkpoint.py", "ns/bin/train.py", "ns/utils/__init__.py"]),
    "a_module_of_a_folder_without_init_in_its_importers_program": (  # EEG-GAN: helpers/ has no __init__.py
        {"helpers/trainer.py": MODULE, "run.py": RUNS.replace("pkg.", "helpers.")},
        "helpers/trainer.py", ["helpers/trainer.py", "run.py"]),
    "a_module_at_the_repository_top_is_looked_for_no_higher": (  # its folder holds .git
        {"repo/.git/HEAD": "", "repo/trainer.py": MODULE, "run.py": RUNS.replace("pkg.", "repo.")},
        "repo/trainer.py", ["repo/trainer.py"]),
    "an_importer_that_does_not_parse_is_skipped": (
        {"pkg/__init__.py": "", "pkg/trainer.py": MODULE, "run.py": "from pkg.trainer import Trainer\ndef f(:\n"},
        "pkg/trainer.py", ["pkg/trainer.py"]),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_the_files_a_checked_file_is_read_with(name):
    files, checked, expected = READS[name]
    write(files)
    program = load_checked(Path(checked), Path(checked).read_bytes())
    assert [str(Path(p.path).resolve().relative_to(Path.cwd().resolve())) for p in program.parts] == expected
    assert [p.importer for p in program.parts] == [p.endswith(".py") and p in files and p != checked and (
        "__main__" in files[p]) for p in expected]


def test_an_imported_file_that_does_not_parse_is_left_out_and_named():
    write({"train.py": "import utils, helper\nif __name__ == '__main__':\n    pass\n", "utils.py": "def f(:\n",
           "helper.py": ""})
    program = load_checked(Path("train.py"), Path("train.py").read_bytes())
    assert [p.rel.name for p in program.parts] == ["train.py", "helper.py"]
    assert len(program.unread) == 1 and program.unread[0].startswith("utils.py:1:") and "cannot parse" in program.unread[0]


def rank_test(test: str) -> bool:
    source = f"import os\nimport torch.distributed as dist\nlocal_rank = int(os.environ.get('LOCAL_RANK', -1))\n" \
             f"if {test}:\n    dist.barrier()\n"
    facts = Facts(parse_module(source))
    branch = next(n for n in facts.by_type[cst.If])
    return Context(facts).ranks.rank_dependent(branch.test)


# a rank is never negative: tests against -1, None and 0 that every process of a distributed run
# passes alike ask whether the run is distributed
@pytest.mark.parametrize("test,parts", [
    ("local_rank == 0", True), ("local_rank <= 0", True), ("local_rank > 0", True), ("local_rank != 0", True),
    ("local_rank >= 0", False), ("local_rank > -1", False), ("local_rank < 0", False), ("local_rank <= -1", False),
    ("local_rank != -1", False), ("local_rank is None", False), ("local_rank < -1", True),
])
def test_which_rank_comparisons_part_the_processes(test, parts):
    assert rank_test(test) is parts


def test_a_rank_handed_to_a_constructor_in_another_file_is_a_rank_there():
    write({"pkg/__init__.py": "", "run.py": RUNS_DDP,
           "pkg/trainer.py": MODULE + "    def fit(self):\n        if self.device_id <= 0:\n            print('main')\n"})
    program = load_checked(Path("pkg/trainer.py"), Path("pkg/trainer.py").read_bytes())
    facts = Facts(program.merged, program)
    branch = next(n for n in facts.by_type[cst.If] if facts.code(n.test) == "self.device_id <= 0")
    assert Context(facts).ranks.rank_dependent(branch.test)
    alone = Facts(parse_module(Path("pkg/trainer.py").read_bytes()))
    assert not Context(alone).ranks.rank_dependent(next(n for n in alone.by_type[cst.If]).test)


def test_verbose_and_json_say_what_was_read():
    write({"pkg/__init__.py": "", "pkg/trainer.py": MODULE, "run.py": RUNS_DDP})
    result = CliRunner().invoke(main, ["check", "-v", "pkg/trainer.py", "run.py"])
    assert "pkg/trainer.py: read 3 file(s), 9 line(s) (in the program of run.py, which imports it)" in result.stderr
    assert "run.py: read 3 file(s), 9 line(s)\n" in result.stderr
    import json
    report = json.loads(CliRunner().invoke(main, ["check", "--json", "pkg/trainer.py"]).stdout)
    assert report["files"][0]["read"] == {"files": 3, "lines": 9, "importer": "run.py", "unread": []}


WRAPPING_RUN = """\
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from helpers.trainer import Trainer


    class DDPTrainer(Trainer):
        def wrap(self):
            self.net = DDP(self.net)


    if __name__ == "__main__":
        dist.init_process_group("gloo")
        trainer = DDPTrainer(torch.nn.Linear(2, 2))
        trainer.wrap()
        trainer.step()
    """


# a helper module of a folder without __init__.py (EEG-GAN's helpers/trainer.py), run by a script
# one folder up whose subclass wraps the attribute the helper reads: checked in that script's
# program (DDP008 at the helper's read); the near miss: a run that wraps it into another attribute
@pytest.mark.parametrize("run,found", [(WRAPPING_RUN, ["DDP008"]), (WRAPPING_RUN.replace("self.net = DDP", "self.ddp = DDP"), [])])
def test_a_helper_of_a_folder_without_init_is_checked_in_the_program_that_runs_it(run, found):
    write({"helpers/trainer.py": "class Trainer:\n    def __init__(self, net):\n        self.net = net\n\n"
                                 "    def step(self):\n        return self.net.in_features\n", "run.py": run})
    report = json.loads(CliRunner().invoke(main, ["check", "--json", "helpers/trainer.py"]).stdout)
    assert [f["code"] for f in report["files"][0]["findings"]] == found and report["files"][0]["note"] is None


def test_convert_in_place_writes_a_module_above_the_script_where_it_lies():
    """(`-o DIR/` writes it beside the converted script: tests/test_packages_output.py.)"""
    write({"scripts/train.py": "import torch\nfrom src.lib import build, make_loader\n\ndef main():\n"
                               "    model = build()\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                               "    for (x,) in make_loader():\n        opt.zero_grad()\n"
                               "        model(x).sum().backward()\n        opt.step()\n\n"
                               "if __name__ == '__main__':\n    main()\n",
           "src/__init__.py": "",
           "src/lib.py": "import torch\n\ndef build():\n    return torch.nn.Linear(4, 4)\n\ndef make_loader():\n"
                         "    ds = torch.utils.data.TensorDataset(torch.randn(64, 4))\n"
                         "    return torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True)\n"})
    done = CliRunner().invoke(main, ["convert", "scripts/train.py", "--in-place"])
    assert done.exit_code == 0, done.output
    assert "DistributedSampler" in Path("src/lib.py").read_text() and not Path("scripts/src").exists()


# ---- round 2: the questions answered across the program's modules -------------------------------

HELPERS = {
    "dist.py": """\
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP


        def is_main():
            if dist.is_initialized():
                if dist.get_rank() == 0:
                    return True
                return False
            return True


        def is_distributed():
            return dist.is_initialized() and dist.get_world_size() > 1


        def wrap(model):
            if not is_distributed():
                return model
            return DDP(model)


        def place(model):
            return model.cuda()


        class Local:
            def load(self, model):
                pass


        class Shared(Local):
            def load(self, model):
                dist.barrier()
        """,
    "loop.py": """\
        def train(model, args):
            if args.should_save:
                print("save")
        """,
    "train.py": """\
        import argparse

        import torch
        import torch.distributed as dist

        from dist import Local, Shared, is_distributed, is_main, place, wrap
        from loop import train


        class Runner:
            def __init__(self, model, sharded):
                picked = Shared if sharded else Local
                self.checkpointer = picked()
                self.elements = {"optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}
                self.elements["model_forward"] = wrap(model)

            def resume(self):
                self.checkpointer.load(self.elements["model_forward"])
                return self.elements["optimizer"]


        if __name__ == "__main__":
            args = argparse.ArgumentParser().parse_args()
            dist.init_process_group("gloo")
            args.should_save = is_main()
            model = wrap(torch.nn.Linear(2, 2))
            bare = place(torch.nn.Linear(2, 2))
            train(model, args)
            print(bare)
            opt = Runner(torch.nn.Linear(2, 2), True).resume()
            if is_main():
                print(opt)
            if is_distributed():
                print(model)
            if args.out["rank"] == 0:
                print(model)
        """,
}

# (the question, the expression it is asked about, the answer)
PROGRAM_QUESTIONS = [
    ("rank_test", "is_main()", True),  # returns under a rank test, whatever its name
    ("rank_test", "is_distributed()", False),
    ("rank_test", "args.should_save", True),  # set by the caller of train(args) from is_main()
    ("rank_test", 'args.out["rank"] == 0', True),  # an entry named for the rank
    ("wrapper", "model", True),  # `wrap()` returns DDP(...) (or the model, in one process)
    ("wrapper", "bare", False),
    ("collective", "self.checkpointer.load(self.elements[\"model_forward\"])", True),  # Shared.load: a barrier
    ("keyed_wrapper", 'self.elements["optimizer"]', False),  # not what "model_forward" holds
    ("keyed_wrapper", 'self.elements["model_forward"]', True),
]


@pytest.mark.parametrize("question,code,answer", PROGRAM_QUESTIONS, ids=[f"{q}:{c}" for q, c, _ in PROGRAM_QUESTIONS])
def test_questions_answered_across_modules(question, code, answer):
    from ddpify.analysis.objects import of

    write(HELPERS)
    program = load_checked(Path("train.py"), Path("train.py").read_bytes())
    facts = Facts(program.merged, program)
    ctx = Context(facts)
    if question == "rank_test":
        test = next(n.test for n in facts.by_type[cst.If] if facts.code(n.test) == code)
        assert ctx.ranks.rank_dependent(test) and not ctx.values.same_everywhere(test) if answer else \
            not ctx.ranks.rank_dependent(test)
    elif question == "wrapper":
        name = [n for n in facts.names if n.value == code and facts.scope(n) is facts.module][-1]  # its last read
        assert (ctx.holds_ddp(name) is not None) is answer
    elif question == "collective":
        call = next(c for c in facts.calls if facts.code(c) == code)
        assert ctx.ranks.is_collective(call) is answer
    else:
        item = next(n for n in facts.by_type[cst.Subscript] if facts.code(n) == code)
        wraps = [s for s in of(facts).values(item) if isinstance(s, cst.Call) and facts.code(s).startswith("DDP(")]
        assert bool(wraps) is answer


FEATURE_LOSS = """\
import torch
from torch import nn


class FeatureLoss(nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.weights = weights
        self.net.load_state_dict(torch.load(self.weights))
"""
BUILDS_THE_LOSS = """\
import os
import pathlib
import sys
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import losses

dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
model = DDP(torch.nn.Linear(8, 8).cuda(), device_ids=[local_rank])
backbone = "pretrained/resnet50-19c8e357.pth"
criterion = losses.FeatureLoss(WEIGHTS)
if dist.get_rank() == 0:
    torch.save(model.module.state_dict(), "checkpoints/model.pt")
"""


# a torch.load without map_location in another module's constructor is reported at the checked
# file's call (DDP014, decision 0260) where it may read a checkpoint the program saves from its GPU
# (a path given on the command line); not for a literal file name no save of the program writes
# (published weights), also one handed through a name, a parameter and an attribute: the helper's
# own load is still the in-file rule's, when the helper is checked
@pytest.mark.parametrize("weights,found", [("sys.argv[1]", ["DDP014"]), ('"pretrained/vgg16-397923af.pth"', []),
                                           ("backbone", []), ('"checkpoints/model.pt"', ["DDP014"]),
                                           ('pathlib.Path(sys.argv[1]) / "vgg16.pth"', [])])
def test_a_load_of_another_modules_constructor_is_reported_where_it_may_read_the_programs_checkpoint(weights, found):
    write({"losses.py": FEATURE_LOSS, "train.py": BUILDS_THE_LOSS.replace("WEIGHTS", weights)})
    report = json.loads(CliRunner().invoke(main, ["check", "--json", "--select", "DDP014", "train.py"]).stdout)
    assert [f["code"] for f in report["files"][0]["findings"]] == found


RESUMES = """\
import torch


def resume(path, net, gpu):
    try:
        state = torch.load(path, map_location=f"cuda:{gpu}")
    except Exception:
        state = torch.load(path)
    net.load_state_dict(state)
"""


# the unmapped load in the `except` of a `try` that loads the same path with a map_location runs only
# where the mapped one raised (axial-deeplab's lib/utils.py): not reported at the call of the checked file
def test_a_fallback_of_a_mapped_load_in_another_module_is_not_reported_at_the_call():
    write({"checkpoints.py": RESUMES, "train.py": BUILDS_THE_LOSS.replace("import losses", "import checkpoints").replace(
        "criterion = losses.FeatureLoss(WEIGHTS)", "checkpoints.resume(sys.argv[1], model, local_rank)")})
    report = json.loads(CliRunner().invoke(main, ["check", "--json", "--select", "DDP014", "train.py"]).stdout)
    assert report["files"][0]["findings"] == []
