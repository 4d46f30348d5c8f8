"""launcher-arg: `--local-rank`/`--local_rank` on the script's argparse parser."""

from __future__ import annotations

import pytest

from tests.support.snippets import SCRIPT, pair, rewrite_tests

NAME = "launcher-arg"

PAIRS = [
    pair("""\
import argparse
import torch
from torch.utils.data import DataLoader, TensorDataset
parser = argparse.ArgumentParser()
parser.add_argument('--lr', type=float, default=0.1)
args = parser.parse_args()
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
import argparse
import torch
from torch.utils.data import DataLoader, TensorDataset
parser = argparse.ArgumentParser()
parser.add_argument('--lr', type=float, default=0.1)
parser.add_argument("--local-rank", "--local_rank", type=int, default=0, help="set by torch.distributed.launch")
args = parser.parse_args()
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", "argparse_gains_both_spellings_of_local_rank"),
    # one spelling known: the other joins it under the same dest
    pair("""\
import argparse
import torch
from torch.utils.data import DataLoader, TensorDataset
parser = argparse.ArgumentParser()
parser.add_argument('--local_rank', type=int, default=-1)
args = parser.parse_args()
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
import argparse
import torch
from torch.utils.data import DataLoader, TensorDataset
parser = argparse.ArgumentParser()
parser.add_argument('--local_rank', type=int, default=-1)
parser.add_argument("--local-rank", dest="local_rank", type=int, help="set by torch.distributed.launch")
args = parser.parse_args()
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", "one_spelling_known"),
    pair("""\
import argparse
def main():
    parser = argparse.ArgumentParser()
    args = parser.parse_args()

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
""", """\
import argparse
from ddpify_runtime import init_distributed_mode

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local-rank", "--local_rank", type=int, default=0, help="set by torch.distributed.launch")
    args = parser.parse_args()
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
""", "argparse_gets_both_launcher_spellings_and_init_follows_parsing", also={"init-distributed"}),
    pair("""\
import argparse
p = argparse.ArgumentParser()
p.add_argument('--local_rank', type=int)
args = p.parse_args()
""", """\
import argparse
p = argparse.ArgumentParser()
p.add_argument('--local_rank', type=int)
p.add_argument("--local-rank", dest="local_rank", type=int, help="set by torch.distributed.launch")
args = p.parse_args()
""", "a_parser_with_one_spelling_gets_the_other_under_the_same_dest", scaffold=SCRIPT.before("train_loader")),
    pair("""\
import argparse
def get_parser():
    parser = argparse.ArgumentParser()
    return parser
opts = get_parser().parse_args()
""", """\
from ddpify_runtime import init_distributed_mode

import argparse
def get_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local-rank", "--local_rank", type=int, default=0, help="set by torch.distributed.launch")
    return parser
opts = get_parser().parse_args()
init_distributed_mode(backend="gloo")
""", "a_parser_built_by_a_helper_gets_the_launcher_argument_and_init_follows_parsing", also={"init-distributed"}, scaffold=SCRIPT.before("train_loader")),
    # a module-level parser parsed in a function that runs twice (MCDropConnect's get_args(), called by
    # the entry and on import of its logger module): the argument goes on once, at module level
    pair("""\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument('--lr', type=float)
def get_args():
    return parser.parse_args()
args = get_args()
again = get_args()
""", """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument('--lr', type=float)
parser.add_argument("--local-rank", "--local_rank", type=int, default=0, help="set by torch.distributed.launch")
def get_args():
    return parser.parse_args()
args = get_args()
again = get_args()
""", "a_module_level_parser_parsed_in_a_function_gets_the_argument_once_at_module_level", scaffold=SCRIPT.before("train_loader")),
    # the namespace read as a whole (a configuration of every option, which rejects keys it does not
    # know): the launcher's option is left out of it unless passed (default=SUPPRESS)
    pair("""\
import argparse
from cfg import override_cfg, DEFAULTS
parser = argparse.ArgumentParser()
parser.add_argument('--lr', type=float)
args = parser.parse_args()
cfg = vars(args)
cfg = override_cfg(DEFAULTS, cfg)
""", """\
from argparse import SUPPRESS

import argparse
from cfg import override_cfg, DEFAULTS
parser = argparse.ArgumentParser()
parser.add_argument('--lr', type=float)
parser.add_argument("--local-rank", "--local_rank", type=int, default=SUPPRESS, help="set by torch.distributed.launch")
args = parser.parse_args()
cfg = vars(args)
cfg = override_cfg(DEFAULTS, cfg)
""", "a_namespace_read_whole_by_vars_leaves_the_launcher_argument_out_unless_passed", scaffold=SCRIPT.before("train_loader")),
    pair("""\
import argparse, json
def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument('--lr', type=float)
    return parser.parse_args()
def save(opts):
    json.dump(opts.__dict__, open("args.json", "w"))
args = get_args()
save(args)
""", """\
from argparse import SUPPRESS

import argparse, json
def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument('--lr', type=float)
    parser.add_argument("--local-rank", "--local_rank", type=int, default=SUPPRESS, help="set by torch.distributed.launch")
    return parser.parse_args()
def save(opts):
    json.dump(opts.__dict__, open("args.json", "w"))
args = get_args()
save(args)
""", "a_namespace_returned_and_handed_to_a_function_that_reads_its_dict_leaves_the_argument_out", scaffold=SCRIPT.before("train_loader")),
    # near miss: `vars()` of another object; the namespace read by attribute only keeps default=0
    pair("""\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument('--lr', type=float)
args = parser.parse_args()
settings = vars(parser)
print(args.lr)
""", """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument('--lr', type=float)
parser.add_argument("--local-rank", "--local_rank", type=int, default=0, help="set by torch.distributed.launch")
args = parser.parse_args()
settings = vars(parser)
print(args.lr)
""", "vars_of_another_object_leaves_the_launcher_argument_with_its_default", scaffold=SCRIPT.before("train_loader")),
]

UNCHANGED = [
    # no argparse: torchrun needs no argument
    pytest.param("""\
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="no_argparse"),
    # both spellings known
    pytest.param("""\
import argparse
import torch
from torch.utils.data import DataLoader, TensorDataset
parser = argparse.ArgumentParser()
parser.add_argument('--local-rank', '--local_rank', type=int)
args = parser.parse_args()
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="both_spellings_known"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def _torchrun_warnings(flag: str) -> list[str]:
    from ddpify.convert import convert
    from tests.support.snippets import warnings
    code = ("import argparse\nimport torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
            f"parser = argparse.ArgumentParser()\nparser.add_argument('{flag}', type=str, default='x')\n"
            "args = parser.parse_args()\n"
            "loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)\n"
            "model = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "for epoch in range(2):\n    for x, y in loader:\n        opt.zero_grad()\n"
            "        ((model(x) - y) ** 2).mean().backward()\n        opt.step()\n")
    return [w for w in warnings(convert(code).changes) if "torchrun stops" in w]


def test_a_script_option_that_abbreviates_several_of_torchruns_is_named():
    """DL_framework's `--log` (sweep 8a, held out): torchrun's parser took it for `--log-dir` or
    `--logs-specs` and stopped before the script started. Near misses: an option torchrun has
    (it passes to the script), one that starts a single one of torchrun's, and an unrelated one."""
    assert "--log-dir, --log_dir, --logs-specs, --logs_specs" in " ".join(_torchrun_warnings("--log"))
    assert _torchrun_warnings("--nproc") and _torchrun_warnings("--master")
    assert not _torchrun_warnings("--log-dir") and not _torchrun_warnings("--mod") and not _torchrun_warnings("--config")


def test_an_option_added_from_a_starred_list_of_flags_that_abbreviates_torchruns_is_named_where_it_is_written():
    """The pytorch-template's `args.add_argument(*opt.flags, ...)` for each `CustomArgs(['--e',
    '--epoch'], ...)` (network-traffic prediction, the fourteenth sweep's held-out half): `--e`
    abbreviates torchrun's --event-log-handler, and torchrun stopped with "ambiguous option" before
    the script started, with nothing in the report; the option strings of the program's lists stand
    for the starred flags."""
    from ddpify.convert import convert
    from tests.support.snippets import warnings
    code = ("import argparse\nimport collections\nimport torch\n"
            "Opt = collections.namedtuple('Opt', 'flags type')\n"
            "options = [Opt(['--lr', '--learning_rate'], float), Opt(['--e', '--epoch'], int)]\n"
            "parser = argparse.ArgumentParser()\n"
            "for opt in options:\n    parser.add_argument(*opt.flags, default=None, type=opt.type)\n"
            "args = parser.parse_args()\n"
            "model = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "for epoch in range(2):\n    opt.zero_grad()\n    model(torch.randn(4, 2)).sum().backward()\n    opt.step()\n")
    found = [w for w in warnings(convert(code).changes) if "torchrun stops" in w]
    assert len(found) == 1 and "`--e`" in found[0] and "--event-log-handler" in found[0]
