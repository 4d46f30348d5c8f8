"""The documentation of the rewrites against the code: README's table against the registry, and
every before -> after example in a rewrite's docstring (what ``ddpify rewrites NAME`` and the
README show) run through that rewrite.

Each example is a fragment; ``CONTEXTS`` puts it into a small training script (``{example}``,
indented to where it stands), which is converted with that rewrite alone (unwrap-model: with
wrap-model, which makes the wrapper it looks behind). The after side must appear in the output,
``...`` standing for code the docstring leaves out. Examples of the ``--strategy fsdp`` form are
converted with that strategy (main-process-only's with the rewrites that shard and gather).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from ddpify.rewrites import NAMES, REWRITES
from tests.support.docs import examples
from tests.support.snippets import EPOCHS, IMPORTS, LOADER, MODEL, only

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_rewrite_table_matches_the_registry():
    """Names and order as the registry runs them; each row says what the rewrite's summary says
    (README's wording is longer, so the row must share the summary's key words)."""
    text = README.read_text()
    table = text[text.index("| rewrite | what it does |"):].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([a-z-]+)` \| (.+) \|$", table, re.M)
    assert [name for name, _ in rows] == [r.name for r in REWRITES]
    for (name, what), rewrite in zip(rows, REWRITES):
        shared = set(re.findall(r"[a-z_]{5,}", rewrite.summary.lower())) & set(re.findall(r"[a-z_]{5,}", what.lower()))
        assert shared, f"{name}: README says {what!r}, the summary {rewrite.summary!r}"


TRAIN = LOADER + MODEL + EPOCHS
TRAIN_LOADER = TRAIN.replace("loader =", "train_loader =").replace("in loader", "in train_loader")
BY_PHASE = """\
for epoch in range(2):
    for phase in phases:
        for x, y in dataloaders[phase]:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
"""
ARGPARSE = "import argparse\n" + IMPORTS + "parser = argparse.ArgumentParser()\n{example}\n" + TRAIN
ACCUMULATE = IMPORTS + LOADER + MODEL.replace("opt =", "optimizer =") + "criterion = torch.nn.MSELoss()\n" \
    "scaler = torch.amp.GradScaler()\naccum_steps = 4\nfor epoch in range(2):\n    for i, (x, y) in enumerate(loader):\n" \
    "{example:8}\n"
WRAPPED = IMPORTS + TRAIN + "{example}\n"

# rewrite -> one script for all its examples, or one per example
CONTEXTS = {
    "launcher-arg": ARGPARSE,
    "init-distributed": ARGPARSE,
    "local-device": IMPORTS + "use_cuda = torch.cuda.is_available()\n{example}\n" + TRAIN,
    "download-first": "from torchvision import datasets\n" + IMPORTS + "{example}\n"
                      + TRAIN.replace("TensorDataset(torch.randn(8, 2), torch.randn(8, 1))", "train_set"),
    "shard-data": [
        IMPORTS + "train_set = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))\n{example}\n" + MODEL
        + EPOCHS.replace("in loader", "in train_loader"),
        *["from torch.utils.data import RandomSampler, SequentialSampler, WeightedRandomSampler\n" + IMPORTS
          + "{example}\nloader = DataLoader(ds, batch_size=4, sampler=sampler)\n" + MODEL + EPOCHS] * 3,
        IMPORTS + "{example}\n" + MODEL + EPOCHS,
        IMPORTS + "phases = ['train', 'val']\ndataloaders = {example}\n" + MODEL + BY_PHASE,
    ],
    "wrap-model": "from torch import optim\n" + IMPORTS + LOADER + "{example}\n"
                  + EPOCHS.replace("opt.", "optimizer."),
    "unwrap-model": [WRAPPED] * 6 + [
        IMPORTS + TRAIN + "if use_best:\n    model = torch.load('best.pt')\n{example}\n",
        IMPORTS + LOADER + "model = torch.nn.DataParallel(Net())\nmodel.to('cpu')\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + EPOCHS + "{example}\n",
    ] + [IMPORTS + TRAIN.replace("opt", "optimizer") + "{example}\n"] * 4,
    "set-epoch": IMPORTS + TRAIN_LOADER.split("for epoch")[0] + """

def train(args, model, device, train_loader, optimizer, epoch):
    for x, y in train_loader:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()


{example}
""",
    "accumulate-no-sync": ACCUMULATE,
    "agree-stop": "import argparse\n" + IMPORTS + "args = argparse.ArgumentParser().parse_args()\n"
                  "criterion = torch.nn.MSELoss()\n" + LOADER + MODEL
                  + "\n\ndef fit(x, y):\n    step = 0\n    loss_ema = x.mean().item()\n{example:4}\n    return step\n\n\n"
                  "for x, y in loader:\n    fit(x, y)\n",
    "shard-metrics": IMPORTS + "phases = ['train', 'val']\nimage_datasets = {{x: TensorDataset(torch.randn(8, 2), torch.randn(8, 1)) for x in phases}}\n"
                     "dataloaders = {{x: DataLoader(image_datasets[x], batch_size=4, shuffle=(x == 'train')) for x in phases}}\n"
                     "dataset_sizes = {{x: len(image_datasets[x]) for x in phases}}\n" + MODEL
                     + "for epoch in range(2):\n    for phase in phases:\n        running_corrects = 0\n{example:8}\n",
    "shard-eval": "import torch.nn.functional as F\n" + IMPORTS + TRAIN
                  + "test_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randint(0, 2, (8,))), batch_size=4)\n"
                  "{example}\n",
    "main-process-only": ["from tqdm import tqdm\n" + IMPORTS + TRAIN_LOADER.split("for epoch")[0]
                          + "for epoch in range(2):\n{example:4}\n        opt.zero_grad()\n"
                          "        ((model(x) - y) ** 2).mean().backward()\n        opt.step()\n",
                          "from torchvision.utils import save_image\n" + IMPORTS + LOADER
                          + "model = torch.nn.Linear(2, 1)\nnetG = torch.nn.Linear(2, 1)\n"
                          "opt = torch.optim.SGD([*model.parameters(), *netG.parameters()], lr=0.1)\n"
                          + EPOCHS + "{example}\n"],
    "load-map-location": IMPORTS + LOADER + MODEL + "{example}\n" + EPOCHS,
}
ALSO = {"unwrap-model": frozenset({"wrap-model"}), "accumulate-no-sync": frozenset({"wrap-model"}),
        "shard-eval": frozenset({"wrap-model"})}
ALSO_FSDP = {"main-process-only": frozenset({"wrap-model", "unwrap-model"}), "agree-stop": frozenset({"wrap-model"})}


def test_every_rewrite_has_a_context():
    assert set(CONTEXTS) == NAMES


def cases():
    for rewrite in REWRITES:
        found = examples(rewrite.doc)
        contexts = CONTEXTS.get(rewrite.name, [])
        contexts = contexts if isinstance(contexts, list) else [contexts] * len(found)
        assert found and len(contexts) == len(found), f"{rewrite.name}: {len(found)} examples"
        for number, (example, context) in enumerate(zip(found, contexts)):
            yield pytest.param(rewrite.name, example, context, id=f"{rewrite.name}-{number}")


def place(context: str, example: str) -> str:
    """``context`` with ``example`` at ``{example}`` (``{example:N}``: indented by N spaces)."""
    def fill(match):
        return textwrap.indent(example, " " * int(match.group(1) or 0))
    return re.sub(r"\{example(?::(\d+))?\}", fill, context).replace("{{", "{").replace("}}", "}")


@pytest.mark.parametrize("name, example, context", list(cases()))
def test_docstring_example(name, example, context):
    also = ALSO_FSDP if example.strategy == "fsdp" else ALSO
    code = only(name, place(context, example.before), also.get(name, ALSO.get(name, frozenset())),
                strategy=example.strategy)
    assert example.pattern().search(code), f"{name}: expected\n{example.after}\nin\n{code}"
