"""init-distributed: `init_distributed_mode()` after argument parsing, at the top of `main()`, or after the imports."""

from __future__ import annotations

from tests.support.snippets import SCRIPT, TRAINS, only, pair, rewrite_tests, unchanged

NAME = "init-distributed"

PAIRS = [
    # a top-level script: after the imports
    pair("""\
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
""", """\
from ddpify_runtime import init_distributed_mode

init_distributed_mode(backend="gloo")
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
""", "a_top_level_script", scaffold=TRAINS.instead_of("loader")),
    # after argument parsing
    pair("""\
import argparse
parser = argparse.ArgumentParser()
args = parser.parse_args()
""", """\
import argparse
from ddpify_runtime import init_distributed_mode

parser = argparse.ArgumentParser()
args = parser.parse_args()
init_distributed_mode(backend="gloo")
""", "after_argument_parsing", scaffold=TRAINS.before("loader")),
    # the twenty-sixth sweep's wavenet amp emulator (decision 0203): `--device` defaults to GPU index 0, used
    # by `.to(args.device)`: it places on a GPU (no gloo asked); an option of a string "cpu" places nothing
    pair("""\
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--device", default=0, help="Pytorch device")
args = parser.parse_args()
model = torch.nn.Linear(2, 1).to(args.device)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x.to(args.device)) - y.to(args.device)) ** 2).mean().backward()
        opt.step()
""", """\
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import init_distributed_mode

parser = argparse.ArgumentParser()
parser.add_argument("--device", default=0, help="Pytorch device")
args = parser.parse_args()
init_distributed_mode()
model = torch.nn.Linear(2, 1).to(args.device)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x.to(args.device)) - y.to(args.device)) ** 2).mean().backward()
        opt.step()
""", "an_options_integer_device_default_places_on_a_gpu"),
    pair("""\
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu", help="Pytorch device")
args = parser.parse_args()
model = torch.nn.Linear(2, 1).to(args.device)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x.to(args.device)) - y.to(args.device)) ** 2).mean().backward()
        opt.step()
""", """\
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import init_distributed_mode

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu", help="Pytorch device")
args = parser.parse_args()
init_distributed_mode(backend="gloo")
model = torch.nn.Linear(2, 1).to(args.device)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x.to(args.device)) - y.to(args.device)) ** 2).mean().backward()
        opt.step()
""", "an_options_string_cpu_device_places_nothing"),
    # no argparse, an entry point: the top of the function it calls, after its docstring
    pair('''\


def main():
    """Train."""
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()


if __name__ == "__main__":
    main()
''', '''\
from ddpify_runtime import init_distributed_mode



def main():
    """Train."""
    init_distributed_mode(backend="gloo")
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()


if __name__ == "__main__":
    main()
''', "no_argparse_an_entry_point", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    pair("""\
import argparse
def parse_args():
    parser = argparse.ArgumentParser()
    return parser.parse_args()
args = parse_args()
""", """\
from ddpify_runtime import init_distributed_mode

import argparse
def parse_args():
    parser = argparse.ArgumentParser()
    return parser.parse_args()
args = parse_args()
init_distributed_mode(backend="gloo")
""", "parse_args_helper_puts_init_after_its_call_site", scaffold=SCRIPT.before("train_loader")),
    pair('''\
def main():
    """Train."""

    import torch
    from torch.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
    loss_fn = torch.nn.MSELoss()
    train_loader = DataLoader(ds, batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(3):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()

if __name__ == '__main__':
    main()
''', '''\
from ddpify_runtime import init_distributed_mode

def main():
    """Train."""
    init_distributed_mode(backend="gloo")

    import torch
    from torch.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
    loss_fn = torch.nn.MSELoss()
    train_loader = DataLoader(ds, batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(3):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()

if __name__ == '__main__':
    main()
''', "without_argparse_init_goes_first_in_main_and_no_launcher_argument"),
    pair("""\
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
""", """\
from ddpify_runtime import init_distributed_mode

init_distributed_mode(backend="gloo")
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
""", "top_level_script_initialises_after_the_imports", scaffold=SCRIPT.instead_of("data")),
    pair("""\
import os
os.environ['CUDA_VISIBLE_DEVICES'] = '0'
""", """\
import os
from ddpify_runtime import init_distributed_mode

init_distributed_mode(backend="gloo")
# TODO(ddpify): CUDA_VISIBLE_DEVICES set here would show every process the same GPU: remove it and choose GPUs on the launcher's command line
os.environ['CUDA_VISIBLE_DEVICES'] = '0'
""", "a_pinned_gpu_gets_a_todo", scaffold=SCRIPT.before("data")),
    pair("""\

import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
def fit(model, train_loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(3):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
""", """\

# TODO(ddpify): this module trains but runs nothing when imported: call init_distributed_mode() (from ddpify_runtime) first thing in the script that uses it
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loss_fn = torch.nn.MSELoss()
def fit(model, train_loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(3):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
""", "a_library_module_that_runs_nothing_gets_a_todo"),
    # no main(): the loader and the model are sharded and wrapped at module level, before the main
    # block calls `train()`: the call goes after the imports, not into `train()`
    pair("""\
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def train():
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

if __name__ == '__main__':
    train()
""", """\
from ddpify_runtime import init_distributed_mode

init_distributed_mode(backend="gloo")
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def train():
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

if __name__ == '__main__':
    train()
""", "module_level_set_up_before_a_train_helper_initialises_first", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # the set-up is in the main block, before it calls `train()`: the call opens the main block
    pair("""\

def train():
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

if __name__ == '__main__':
    print('start')
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train()
""", """\
from ddpify_runtime import init_distributed_mode

def train():
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

if __name__ == '__main__':
    init_distributed_mode(backend="gloo")
    print('start')
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train()
""", "set_up_in_the_main_block_before_the_helper_initialises_there", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # the main block sets up and trains itself, its first call of the program's a data helper (the
    # twentieth sweep's flow_matching_train_fn: `make_dataset()` of dataset.py): the call opens the
    # main block, not the helper, which anything else that imports it would then run too
    pair("""\

def make_rows(n):
    return torch.zeros(n, 2)

if __name__ == '__main__':
    rows = make_rows(8)
    loader = DataLoader(TensorDataset(rows, torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""", """\
from ddpify_runtime import init_distributed_mode

def make_rows(n):
    return torch.zeros(n, 2)

if __name__ == '__main__':
    init_distributed_mode(backend="gloo")
    rows = make_rows(8)
    loader = DataLoader(TensorDataset(rows, torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""", "a_main_block_that_trains_itself_initialises_there_not_in_its_first_helper", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # near miss: constants and imports around the one call of `main()` leave the call at main's top
    pair("""\


def main():
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()


if __name__ == "__main__":
    import sys
    EPOCHS = 2
    sys.exit(main())
""", """\
from ddpify_runtime import init_distributed_mode



def main():
    init_distributed_mode(backend="gloo")
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()


if __name__ == "__main__":
    import sys
    EPOCHS = 2
    sys.exit(main())
""", "a_main_block_that_only_calls_main_beside_constants_initialises_in_main", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # a fold loop in the main block builds the loader, then calls the helper that builds the model:
    # the helper's top (the first function the main block calls) would come after the sampler needs
    # the process group (a cross-validation script of the eleventh fresh sweep, part C, held out:
    # "Default process group has not been initialized", under plain python too)
    pair("""\

def make_model():
    return torch.nn.Linear(2, 1)

def train():
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

if __name__ == '__main__':
    for fold in range(2):
        with open('fold.log', 'w'):
            loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
            model = make_model()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            train()
""", """\
from ddpify_runtime import init_distributed_mode

def make_model():
    return torch.nn.Linear(2, 1)

def train():
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

if __name__ == '__main__':
    init_distributed_mode(backend="gloo")
    for fold in range(2):
        with open('fold.log', 'w'):
            loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
            model = make_model()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            train()
""", "a_loader_built_in_a_fold_loop_before_the_model_helper_is_called_initialises_first", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # the model is wrapped after a loop that sets its weights (the wrap's place is that `for`), and a
    # helper is called later: the compound statement holding the wrap counts as the wrap (the
    # eleventh sweep's char_rnnlm got the call at the top of its `load_corpus()` helper, after the wrap)
    pair("""\

def load_rows(n):
    return [torch.randn(2) for _ in range(n)]

if __name__ == '__main__':
    model = torch.nn.Linear(2, 1)
    for param in model.parameters():
        param.data.uniform_(-0.08, 0.08)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rows = load_rows(8)
    loader = DataLoader(TensorDataset(torch.stack(rows), torch.randn(8, 1)), batch_size=4, shuffle=True)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""", """\
from ddpify_runtime import init_distributed_mode

def load_rows(n):
    return [torch.randn(2) for _ in range(n)]

if __name__ == '__main__':
    init_distributed_mode(backend="gloo")
    model = torch.nn.Linear(2, 1)
    for param in model.parameters():
        param.data.uniform_(-0.08, 0.08)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rows = load_rows(8)
    loader = DataLoader(TensorDataset(torch.stack(rows), torch.randn(8, 1)), batch_size=4, shuffle=True)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""", "a_model_wrapped_after_a_loop_over_its_weights_initialises_before_it", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # the loader is sharded at module level and the main block then trains: initialising at the top
    # of the main block would come after the sampler needs the process group
    pair("""\
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)

if __name__ == '__main__':
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""", """\
from ddpify_runtime import init_distributed_mode

init_distributed_mode(backend="gloo")
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)

if __name__ == '__main__':
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""", "module_level_set_up_before_the_main_block_initialises_after_the_imports", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # synthetic data drawn with numpy at module level: numpy seeds itself per process, so the call
    # (which gives every process rank 0's state) must come first
    pair("""\
import numpy as np
noise = np.random.normal(0, 1, (8, 1))
import torch
from torch.utils.data import DataLoader, TensorDataset

if __name__ == '__main__':
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""", """\
import numpy as np
from ddpify_runtime import init_distributed_mode

init_distributed_mode(backend="gloo")
noise = np.random.normal(0, 1, (8, 1))
import torch
from torch.utils.data import DataLoader, TensorDataset

if __name__ == '__main__':
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
""", "numpy_draws_at_module_level_come_after_the_call"),
]

# Every script that trains gets the call or, where nothing runs it (a module that only defines a
# trainer), a TODO, so the near misses follow one that gets it after its imports: it goes nowhere
# near them.
UNCHANGED = [
    unchanged("""\
import argparse
def parse():
    return argparse.ArgumentParser().parse_args()
""", "argument_parsing_in_a_function_never_called", TRAINS.at_end),
    unchanged("""\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
""", "a_parser_never_asked_to_parse", TRAINS.at_end),
    unchanged("""\
import os
print(os.environ.get("CUDA_VISIBLE_DEVICES"))
""", "cuda_visible_devices_read_not_set", TRAINS.at_end),
    unchanged("""\
if torch.distributed.is_available():
    print("this build can distribute")
""", "a_check_that_the_build_can_distribute", TRAINS.at_end),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


CONFIG_CLASS = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def describe(cfg):
    return cfg.__name__


class Config:
    epochs = 2
    train_loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


class Runner:
    def __init__(self, cfg):
        self.cfg = cfg

    def run(self):
        for epoch in range(self.cfg.epochs):
            for x, y in self.cfg.train_loader:
                self.cfg.optimizer.zero_grad()
                ((self.cfg.model(x) - y) ** 2).mean().backward()
                self.cfg.optimizer.step()


if __name__ == "__main__":
    print(describe(Config))
    Runner(Config).run()
"""


def test_a_class_whose_body_shards_a_loader_or_wraps_a_model_gets_the_call_before_it():
    """A configuration class whose body builds the training loader and the model (run when the class
    is defined, at import): its DistributedSampler and its wrap came before the call, which went to
    the main block (`Default process group has not been initialized`). The call goes before the class;
    the functions above it stay as they are. Near miss: a class whose body builds neither keeps the
    call in the main block."""
    out = only(NAME, CONFIG_CLASS, frozenset({"wrap-model", "shard-data"}))
    assert out.index("def describe(cfg):") < out.index('\ninit_distributed_mode(backend="gloo")\n') \
        < out.index("class Config:") and out.count("init_distributed_mode(backend=") == 1
    plain = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Config:
    epochs = 2
    lr = 0.1


if __name__ == "__main__":
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=Config.lr)
    for epoch in range(Config.epochs):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
"""
    assert 'if __name__ == "__main__":\n    init_distributed_mode(' in only(NAME, plain)
