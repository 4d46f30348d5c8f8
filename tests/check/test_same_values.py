"""Questions of `SameValues` asked directly: configuration built from the command line by another
module's function is the same on every process; what a process answers for itself is not."""

from __future__ import annotations

import libcst as cst
import pytest

from ddpify.check.context import Context
from ddpify.syntax.facts import Facts
from ddpify.syntax.parse import parse_module

HEAD = ("import argparse\nimport os\nimport time\nimport torch\nfrom project.config import setup, Config\n"
        "from project.engine import evaluate\nargs = argparse.ArgumentParser().parse_args()\n"
        "args.gpu = int(os.environ['LOCAL_RANK'])\n")
CONFIGURATION = {  # `cfg = ...; if cfg.max_iter > 3:`
    "setup_of_the_command_line": "setup(args)",
    "from_the_config_file_it_names": "Config.fromfile(args.config)",
    "with_literals": "setup(args, 'train')",
    "through_a_parameter": "build(args)",  # `def build(a): return setup(a)`
    "by_the_programs_own_function": "load(args)",  # merges a file beside it, the command line's options
    "a_class_of_another_module_with_its_defaults": "Config()",
}
PER_PROCESS = {
    "built_from_the_local_rank": "setup(args.gpu)",
    "what_evaluation_returns": "evaluate(model, loader)",
    "a_clock": "time.time()",
    "nothing_to_build_from": "setup()",
    "a_program_function_that_reads_a_clock": "stamp(args)",
}


HELPERS = """
import pathlib
def build(a):
    return setup(a)
def load(a):
    a.opts += [f"out={a.out}"]
    base = Config.load(pathlib.Path(__file__).parent / "default.yaml")
    cfg = Config.merge(base, Config.from_cli(a.opts))
    return cfg
def stamp(a):
    return time.time()
"""


def _shared(value: str) -> bool:
    code = HEAD + HELPERS + "cfg = " + value + "\nif cfg.max_iter > 3:\n    pass\n"
    facts = Facts(parse_module(code))
    return Context(facts).values.same_everywhere(facts.by_type[cst.If][-1].test)


@pytest.mark.parametrize("name", sorted(CONFIGURATION))
def test_configuration_from_the_command_line_is_shared(name):
    assert _shared(CONFIGURATION[name])


@pytest.mark.parametrize("name", sorted(PER_PROCESS))
def test_what_a_process_answers_for_itself_is_not(name):
    assert not _shared(PER_PROCESS[name])


COUNTER = """
from torch.utils.data import DataLoader, DistributedSampler
loader = DataLoader([], sampler=DistributedSampler([]))
step = 0
for i, (x, y) in enumerate(loader):
    update = (i + 1) % args.accum == 0 or i + 1 == len(loader)
    if {condition}:
        step += 1
    if step >= args.max_steps:
        break
"""


@pytest.mark.parametrize("condition, shared", [("update", True), ("update and torch.isfinite(y).all()", False),
                                               ("time.time() > 3", False)])
def test_a_counter_is_shared_where_every_condition_it_is_stepped_under_is(condition, shared):
    facts = Facts(parse_module(HEAD + COUNTER.format(condition=condition)))
    assert Context(facts).values.same_everywhere(facts.by_type[cst.If][-1].test) is shared


@pytest.mark.parametrize("binding, shared", [
    ("out, flag = args.out, torch.distributed.get_rank() == 0", False),  # its element asks for the rank
    ("out, flag = torch.distributed.get_rank(), args.epochs > 1", True),  # its own element is the command line's
])
def test_a_name_bound_from_a_tuple_written_out_holds_its_element(binding, shared):
    facts = Facts(parse_module(HEAD + binding + "\nif flag:\n    pass\n"))
    assert Context(facts).values.same_everywhere(facts.by_type[cst.If][-1].test) is shared


@pytest.mark.parametrize("binding, shared", [
    ("key = (args.out, int(os.environ['RANK']))", False),  # a tuple is as shared as its elements
    ("key = [args.out, time.time()]", False),
    ("key = {args.out, int(os.environ['LOCAL_RANK'])}", False),
    ("key = (args.out, *args.extra, args.epochs)", True),
    ("key = [args.out, len(args.extra)]", True),
])
def test_a_tuple_list_or_set_written_out_is_as_shared_as_its_elements(binding, shared):
    facts = Facts(parse_module(HEAD + binding + "\nif key:\n    pass\n"))
    assert Context(facts).values.same_everywhere(facts.by_type[cst.If][-1].test) is shared


SETUP = """
def setup_env():
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    else:
        rank, world = 0, 1
    return rank, world, torch.device(f"cuda:{rank}"), torch.optim.SGD([], lr=rank)
rank, world, device, optimizer = setup_env()
"""


@pytest.mark.parametrize("test, shared", [
    ("world > 1", True),  # its own part: the launcher's environment, whatever the other parts are
    ("device.index == 0", False),  # its part reads the rank
    ("'LOCAL_RANK' in os.environ", True),  # whether the launcher set a variable: alike everywhere
])
def test_a_name_unpacked_from_a_helpers_tuple_is_judged_by_its_own_part(test, shared):
    facts = Facts(parse_module(HEAD + SETUP + f"if {test}:\n    pass\n"))
    assert Context(facts).values.same_everywhere(facts.by_type[cst.If][-1].test) is shared


STAGES = """
import glob
import torch.distributed as dist
from project.engine import Trainer
rank = int(os.environ["RANK"])
dist.init_process_group("nccl", rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
loader = torch.utils.data.DataLoader([], sampler=torch.utils.data.DistributedSampler([]))
class Configuration:
    def parse(self):
        parser = argparse.ArgumentParser()
        known, _ = parser.parse_known_args()
        self.args = vars(known)
    def stage_parameters(self, stage):
        return {"iterations": self.args["s%s_iterations" % stage]}
    def __getitem__(self, key):
        return self.args[key]
raw_config = Configuration()
raw_config.parse()
trainer = Trainer(rank)
"""


@pytest.mark.parametrize("binding, test, shared", [
    # a dict merged from the configuration's dict and what its method looks up
    ("config = dict(**raw_config.args, **raw_config.stage_parameters('0'))", "config['iterations'] > 3", True),
    ("config = dict(**raw_config.args, shard=len(glob.glob(f'{rank}/*')))", "config['shard'] > 3", False),
    # an item of a shared list: the configuration's, through its `__getitem__`, or the command line's
    ("for stage in list(raw_config['stages']):\n    pass", "stage == '0'", True),
    ("for si, stage in enumerate(args.stages.split(',')):\n    pass", "stage == '0'", True),
    ("for stage in sorted(glob.glob(f'{rank}/*')):\n    pass", "stage == '0'", False),  # this process's files
    ("for batch in loader:\n    pass", "batch == 0", False),  # a loader's batch
    # what a checkpoint holds, read by an object built with the rank
    ("step = trainer.load_checkpoint(args.resume)", "step > 3", True),
    ("step = trainer.first_step(args.resume)", "step > 3", False),
])
def test_a_stage_of_the_configuration_is_shared(binding, test, shared):
    facts = Facts(parse_module(HEAD + STAGES + binding + f"\nif {test}:\n    pass\n"))
    assert Context(facts).values.same_everywhere(facts.by_type[cst.If][-1].test) is shared


@pytest.mark.parametrize("loop, shared", [("for stage in args.stages:", True),  # `nargs='+'`
                                          ("for stage in ['a', args.first]:", True),
                                          ("for stage in loader:", False),
                                          ("for stage in {'a', 'b'}:", False)])  # a set's order differs
def test_the_core_takes_an_item_of_a_shared_list(loop, shared):
    from ddpify.analysis.same_values import same_everywhere
    facts = Facts(parse_module(HEAD + STAGES + loop + "\n    if stage == 'a':\n        pass\n"))
    assert same_everywhere(facts, facts.by_type[cst.If][-1].test) is shared


@pytest.mark.parametrize("filled, shared", [
    ("stages.append('c')", True),
    ("stages.append(str(int(os.environ['RANK'])))", False),  # each process appends its own
    ("stages.insert(0, str(int(os.environ['RANK'])))", False),
])
def test_an_item_of_a_list_filled_in_place_is_shared_only_where_every_fill_is(filled, shared):
    """Both answers read one index of what fills a list (`Facts.filled`): check's (wide) no longer
    takes an item of `stages = ['a', 'b']` for a phase name when the program appends its rank."""
    from ddpify.analysis.same_values import same_everywhere
    code = HEAD + "stages = ['a', 'b']\n" + filled + "\nfor stage in stages:\n    if stage == 'a':\n        pass\n"
    facts = Facts(parse_module(code))
    test = facts.by_type[cst.If][-1].test
    assert Context(facts).values.same_everywhere(test) is shared
    assert same_everywhere(facts, test) is shared


@pytest.mark.parametrize("binding, shared", [
    ("name = 'F' + str(args.frames)", True),  # `str` of the command line
    ("if rank == 0:\n    name = 'F' + str(args.frames)", False),  # only rank 0 holds it: the others have none
])
def test_a_name_only_some_ranks_bind_is_not_shared(binding, shared):
    facts = Facts(parse_module(HEAD + STAGES + binding + "\nif name == 'F1':\n    pass\n"))
    assert Context(facts).values.same_everywhere(facts.by_type[cst.If][-1].test) is shared


@pytest.mark.parametrize("guard, shared", [
    ('__name__ == "__main__"', True),  # every process runs the script as its main module
    ("int(os.environ['LOCAL_RANK']) == 0", False),  # only one process parses: the others hold nothing
    ("time.time() > 1e9", False),  # a clock each process reads for itself
])
def test_the_command_line_parsed_under_an_if_every_process_takes_is_shared(guard, shared):
    """`args = parser.parse_args()` under `if __name__ == "__main__":`, then `if args.make_vocab:`
    (the fifteenth sweep part C's text CNN, held out, after its run; a fixture of ours): the core
    took the `if` for a branch some processes may skip, `args.make_vocab` for a value that may
    differ, and the vocabulary `make_vocab()` writes got no barrier before `train()` read it back
    (a warning instead). An `if` every process takes alike is no such branch."""
    from ddpify.analysis.same_values import same_everywhere
    code = ("import argparse\nimport os\nimport time\n"
            f"if {guard}:\n    parser = argparse.ArgumentParser()\n    opts = parser.parse_args()\n"
            "    if opts.make_vocab:\n        pass\n")
    facts = Facts(parse_module(code))
    assert same_everywhere(facts, facts.by_type[cst.If][-1].test) is shared


LOADER_HEAD = ("import torch\nimport torch.distributed as dist\nfrom accelerate import Accelerator\n"
               "from torch.utils.data import DataLoader, Subset, TensorDataset\n"
               "from torch.utils.data.distributed import DistributedSampler\nfrom project import helper\n"
               "accelerator = Accelerator()\nrank = dist.get_rank()\ndata = TensorDataset(torch.randn(100, 3))\n"
               "prepared = accelerator.prepare(torch.nn.Linear(3, 1), DataLoader(data, batch_size=8))\n")
SHARED_LENGTHS = {  # `loader = None` (a trainer's, before it builds one), `loader = ...`, `if len(loader) > 3:`
    "sharded_by_a_distributed_sampler": "DataLoader(data, sampler=DistributedSampler(data, rank=rank), batch_size=8)",
    "the_whole_data_set": "DataLoader(data, batch_size=8, shuffle=True)",
    "prepared_by_an_accelerator": "accelerator.prepare(DataLoader(data, batch_size=8))",
    "an_item_of_what_prepare_handed_back": "prepared[1]",
}
PER_PROCESS_LENGTHS = {  # `loader = ...`, `if len(loader) > 3:`
    "a_loader_of_this_process_share": "DataLoader(Subset(data, range(rank, 100, 7)), batch_size=8)",
    "this_process_share": "Subset(data, indices=range(rank, 100, 7))",
    "prepared_by_something_else": "helper.prepare(DataLoader(data, batch_size=8))",
}


def _length_shared(value: str, wide: bool, first: str = "") -> bool:
    code = LOADER_HEAD + first + "loader = " + value + "\nif len(loader) > 3:\n    pass\n"
    facts = Facts(parse_module(code))
    return Context(facts).values.same_everywhere(facts.by_type[cst.If][-1].test, wide=wide)


@pytest.mark.parametrize("name", sorted(SHARED_LENGTHS))
def test_the_length_of_a_loader_sharded_alike_is_shared_in_the_core(name):
    assert _length_shared(SHARED_LENGTHS[name], wide=False, first="loader = None\n")


@pytest.mark.parametrize("name", sorted(PER_PROCESS_LENGTHS))
def test_the_length_of_a_process_own_share_is_not(name):
    assert not _length_shared(PER_PROCESS_LENGTHS[name], wide=False)


# what a collective agreed, by scope (`SameValues.agreed`): each program ends in the `if` asked about
AGREED = {  # the same on every process
    "agreed_in_the_same_function": """
def train(loss):
    found = torch.rand(())
    torch.distributed.all_reduce(found)
    if found.item() > 0:
        pass
""",
    "agreed_in_place_by_a_helper_given_it": """
def sync(flag):
    torch.distributed.broadcast(flag, 0)
def train():
    stop = torch.rand(())
    sync(stop)
    if stop.item():
        pass
""",
    "agreed_in_place_through_two_helpers": """
def sync(flag):
    torch.distributed.broadcast(flag, 0)
def agree(t):
    sync(t)
def train():
    stop = torch.rand(())
    agree(stop)
    if stop.item():
        pass
""",
    "returned_by_the_helper_that_agreed_it": """
def mean(x):
    torch.distributed.all_reduce(x)
    return x
def train():
    if mean(torch.rand(())).item() > 3:
        pass
""",
    "passed_to_a_parameter": """
def out_of_time(elapsed):
    return elapsed > 3
def train():
    seconds = torch.tensor(time.time())
    torch.distributed.all_reduce(seconds)
    if out_of_time(seconds):
        pass
""",
    "kept_on_self_by_another_method": """
class Trainer:
    def sync(self):
        self.stop = torch.rand(())
        torch.distributed.all_reduce(self.stop)
    def fit(self):
        self.sync()
        if self.stop.item():
            pass
""",
}
NOT_AGREED = {  # near misses: each process's own value
    "a_parameter_spelled_as_a_tensor_agreed_elsewhere": """
def mean_elapsed(t0):
    elapsed = torch.tensor(time.time() - t0)
    torch.distributed.all_reduce(elapsed)
    return elapsed.item()
def out_of_time(elapsed):
    return elapsed > 3
def train(t0):
    print(mean_elapsed(t0))
    if out_of_time(time.time() - t0):
        pass
""",
    "a_local_spelled_as_a_tensor_agreed_elsewhere": """
def sync():
    stop = torch.rand(())
    torch.distributed.all_reduce(stop)
def train():
    stop = torch.rand(())
    sync()
    if stop.item():
        pass
""",
    "a_method_spelled_as_a_variable_agreed_there": """
def train(stats):
    loss = torch.rand(())
    for item in stats:
        torch.distributed.all_reduce(item)
    if loss.item() > 3:
        pass
""",
    "a_copy_the_helper_agreed_in_place": """
def sync(flag):
    flag = flag.clone()
    torch.distributed.broadcast(flag, 0)
def train():
    stop = torch.rand(())
    sync(stop)
    if stop.item():
        pass
""",
    "an_attribute_of_another_class_spelled_alike": """
class Syncer:
    def sync(self):
        self.stop = torch.rand(())
        torch.distributed.all_reduce(self.stop)
class Trainer:
    def fit(self):
        self.stop = torch.rand(())
        if self.stop.item():
            pass
""",
}


def _agreed(program: str) -> bool:
    facts = Facts(parse_module(HEAD + program))
    return Context(facts).values.same_everywhere(facts.by_type[cst.If][-1].test)


@pytest.mark.parametrize("name", sorted(AGREED))
def test_what_a_collective_agreed_is_shared_where_it_flows(name):
    assert _agreed(AGREED[name])


@pytest.mark.parametrize("name", sorted(NOT_AGREED))
def test_a_name_spelled_as_an_agreed_one_in_another_scope_is_not(name):
    assert not _agreed(NOT_AGREED[name])


CONSTRUCTED_BY_NAME = """
import argparse
import importlib
from project.util import EasyDict


def call_by_name(*args, func_name=None, **kwargs):
    func = getattr(importlib.import_module("project.lib"), func_name)
    return func(*args, **kwargs)


def construct(*args, class_name=None, **kwargs):
    return call_by_name(*args, func_name=class_name, **kwargs)


def train(data_kwargs=None, model_kwargs=None):
    data = construct(**data_kwargs)
    common_kwargs = EasyDict(width=data.width)
    model = construct(**model_kwargs, **common_kwargs)
    if model.ready:
        pass
    if data_kwargs.path:
        pass


opts = argparse.ArgumentParser().parse_args()
c = EasyDict(data_kwargs=EasyDict(class_name="Data", path=opts.data), model_kwargs=EasyDict(class_name="Model"))
train(**c)
"""


def test_a_star_of_the_configuration_that_reaches_its_own_function_again_is_asked_once():
    """`construct(**model_kwargs, **common_kwargs)`, where `common_kwargs` holds what an earlier
    `construct(...)` built: whether `construct`'s `*args` is configuration asks its call sites, one
    of which asks `common_kwargs`, which asks `construct`'s `*args` again. The question goes on
    with the depth and the references already seen (it used to start again from the top, and the
    check of a StyleGAN-style `training_loop(**c)` ended in RecursionError, decision 0269); the
    configuration the same program passes whole is still configuration."""
    facts = Facts(parse_module(CONSTRUCTED_BY_NAME))
    values = Context(facts).values
    built, passed = facts.by_type[cst.If]
    assert values.same_everywhere(built.test) is False
    assert values.same_everywhere(passed.test)
