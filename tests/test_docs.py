"""The documentation against the code: the generated pages of docs/ are up to date
(`scripts/gen_docs.py`), their links resolve, README stays a landing page, and every before ->
after example in a rewrite's docstring (what ``ddpify rewrites NAME`` and docs/rewrites.md show)
is run through that rewrite.

Each example is a fragment; ``CONTEXTS`` puts it into a small training script (``{example}``,
indented to where it stands), which is converted with that rewrite alone (unwrap-model: with
wrap-model, which makes the wrapper it looks behind). The after side must appear in the output,
``...`` standing for code the docstring leaves out. Examples of the ``--strategy fsdp`` form are
converted with that strategy (main-process-only's with the rewrites that shard and gather).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ddpify.rewrites import NAMES, REWRITES
from tests.support.docs import examples
from tests.support.snippets import EPOCHS, IMPORTS, LOADER, MODEL, only

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = _generator()


def test_generated_docs_are_up_to_date(request):
    """Every generated block says what the code says now; `--update-goldens` rewrites them (as
    `python scripts/gen_docs.py` does)."""
    stale = gen_docs.stale()
    if request.config.getoption("--update-goldens"):
        for page, text in stale.items():
            page.write_text(text, encoding="utf-8")
        stale = gen_docs.stale()
    assert not stale, f"stale: {', '.join(p.name for p in stale)}: run `python scripts/gen_docs.py`"


def test_generator_runs_from_anywhere_without_torch(tmp_path):
    """`python scripts/gen_docs.py --check` from another folder: exit 0 (nothing stale), and torch
    never imported (the runtime is read with `ast`)."""
    code = ("import runpy, sys\nsys.argv = [sys.argv[1], '--check']\ntry:\n"
            "    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit as end:\n"
            "    print(end.code, 'torch' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT / "scripts" / "gen_docs.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert (proc.stdout, proc.stderr) == ("0 False\n", "")


def test_every_generated_block_is_on_one_page():
    assert sorted(gen_docs.blocks_used()) == sorted(gen_docs.GENERATORS)


def test_rewrites_page_lists_the_registry_in_order_with_each_summary():
    text = (DOCS / "rewrites.md").read_text()
    rows = re.findall(r"^\| \[`([a-z-]+)`\]\(#([a-z-]+)\) \| (.+) \|$", text, re.M)
    assert [(name, anchor, summary) for name, anchor, summary in rows] == \
        [(r.name, r.name, r.summary) for r in REWRITES]
    sections = re.findall(r"^### ([a-z-]+)$", text, re.M)
    assert sections == [r.name for r in REWRITES]


def _could_be(quote: str, message: str) -> bool:
    """Can `quote` (`...` for text left out) be a quotation of `message` (`…` for what the script
    supplies)? Backquoted names count as one (`model` quotes `…`)."""
    def pattern(text, gap):
        return re.sub(r"\s*" + re.escape(gap) + r"\s*", "*", re.sub(r"`[^`]*`", "`_`", text.strip()))
    a, b = pattern(quote, "..."), pattern(message, "…")
    meets = [[False] * (len(b) + 1) for _ in range(len(a) + 1)]  # meets[i][j]: a[i:] and b[j:] can be equal
    meets[len(a)][len(b)] = True
    for i in range(len(a), -1, -1):
        for j in range(len(b), -1, -1):
            if i < len(a) and a[i] == "*":
                meets[i][j] = meets[i + 1][j] or (j < len(b) and meets[i][j + 1])
            elif j < len(b) and b[j] == "*":
                meets[i][j] = meets[i][j + 1] or (i < len(a) and meets[i + 1][j])
            elif i < len(a) and j < len(b):
                meets[i][j] = a[i] == b[j] and meets[i + 1][j + 1]
    return meets[0][0]


def test_todos_quoted_in_the_shapes_table_are_ones_a_rewrite_writes():
    """The hand-written shapes table quotes TODOs; each must be (the start of) one the code writes."""
    written = [m for r in REWRITES for kind, m in gen_docs.messages(gen_docs.rewrite_path(r)) if kind == "todo"]
    text = (DOCS / "shapes.md").read_text().split("\n## ", 1)[0]
    rows = [row for row in text.splitlines() if row.startswith("| ") and not row.startswith("| Jupyter notebooks")]
    quotes = []
    for cell in (c for row in rows for c in row.split(" | ") if "# TODO(ddpify): " in c):
        found = re.search(r"# TODO\(ddpify\): (.*?) \.\.\.`", cell) or \
            re.search(r"# TODO\(ddpify\): (.*?)`(?=[;:,]? |$)", cell)
        quotes.append(found.group(1) + " ..." if found.group(0).endswith("...`") else found.group(1))
    assert len(quotes) >= 10
    for quote in quotes:
        assert any(_could_be(quote, message) for message in written), quote


def _anchors(text: str) -> set:
    """GitHub's anchors for the headings of a Markdown page."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), re.M):
        found.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", [README, README.parent / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md")),
                                  *sorted((DOCS / "decisions").glob("*.md"))], ids=lambda p: p.name)
def test_links_resolve(page):
    """Relative links name a file that exists, and a heading of it when they have an anchor."""
    text = page.read_text()
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))  # no code blocks or spans
    for target, anchor in re.findall(r"\]\((?!https?:)([^)#]*)(?:#([^)]+))?\)", prose):
        path = (page.parent / target).resolve() if target else page
        assert path.exists(), f"{page.name}: link to {target}"
        if anchor:
            assert anchor in _anchors(path.read_text()), f"{page.name}: no heading for #{anchor} in {path.name}"


def test_readme_is_a_landing_page_that_links_every_docs_page():
    text = README.read_text()
    assert len(text.splitlines()) < 200
    linked = set(re.findall(r"\]\(docs/([a-z-]+\.md)", text))
    assert linked == {p.name for p in DOCS.glob("*.md")}


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

ENSEMBLE = "from torch.optim import SGD\n" + IMPORTS + LOADER + "models = [torch.nn.Linear(2, 1) for _ in range(2)]\n" \
    "{example}\nfor x, y in loader:\n    for model, opt in zip(models, opts):\n        opt.zero_grad()\n" \
    "        ((model(x) - y) ** 2).mean().backward()\n        opt.step()\n"
SEQUENTIAL = IMPORTS + TRAIN.replace("torch.nn.Linear(2, 1)", "torch.nn.Sequential(torch.nn.Linear(2, 1))") + "{example}\n"
WRAP = "from torch import optim\n" + IMPORTS + LOADER + "{example}\n" + EPOCHS.replace("opt.", "optimizer.")
TEMPERATURE = "from torch import optim\nfrom torch.optim import Adam\n" + IMPORTS + LOADER + MODEL \
    + "lr = 0.1\nlog_alpha = torch.zeros(1, requires_grad=True)\n{example}\n" \
    + EPOCHS.replace("opt.step()", "opt.step()\n        alpha_optim.zero_grad()\n        log_alpha.exp().backward()\n"
                     "        alpha_optim.step()")
REPLACED = "import argparse\nimport torch.nn as nn\n" + IMPORTS + LOADER + """\
args = argparse.ArgumentParser().parse_args()


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(2, 1), nn.Sigmoid())

    def forward(self, x):
        return self.main(x)


netD = Critic()
opt = torch.optim.SGD(netD.parameters(), lr=0.1)
layers = [nn.Linear(2, 1)]
if args:
{example:4}
    opt = torch.optim.SGD(netD.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        ((netD(x) - y) ** 2).mean().backward()
        opt.step()
"""
ALIASED = "import torch.nn as nn\n" + IMPORTS + LOADER + """\


class PointNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = nn.Linear(2, 2)
        self.transform = nn.Identity()

    def set_input_transform(self, module):
        self.transform = module

    def forward(self, x):
        return self.base(self.transform(x)).sum(1, keepdim=True)


def fit(net, opt):
    for x, y in loader:
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        opt.step()


model = PointNet()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
fit(model, opt)
{example}
model_tnet.set_input_transform(nn.Linear(2, 2))
opt_tnet = torch.optim.SGD(model_tnet.parameters(), lr=0.1)
fit(model_tnet, opt_tnet)
"""
OWN_WRAP = "import argparse\nimport torch.distributed as dist\n" + IMPORTS + LOADER \
    + "args = argparse.ArgumentParser().parse_args()\nmodel = torch.nn.Linear(2, 1)\n{example}\n" + MODEL.split("\n")[1] \
    + "\n" + EPOCHS
SPLIT_LOSS = """\
class SplitCrossEntropyLoss(torch.nn.Module):
    def __init__(self, emsize, splits):
        super().__init__()
        self.splits = splits
        if splits:
            self.tails = torch.nn.Parameter(torch.zeros(len(splits), emsize))

    def forward(self, out, y):
        return ((out - y) ** 2).mean() + self.penalty()

    def penalty(self):
        return self.tails.sum() if self.splits else 0.0


"""

# rewrite -> one script for all its examples, or one per example
AGREE_STOP = ("import argparse\n" + IMPORTS + "args = argparse.ArgumentParser().parse_args()\n"
              "criterion = torch.nn.MSELoss()\n" + LOADER + MODEL
              + "\n\ndef fit(x, y):\n    step = 0\n    loss_ema = x.mean().item()\n{example:4}\n    return step\n\n\n"
              "for x, y in loader:\n    fit(x, y)\n")
CONTEXTS = {
    "launcher-arg": ARGPARSE,
    "init-distributed": ARGPARSE,
    "local-device": IMPORTS + "use_cuda = torch.cuda.is_available()\n{example}\n" + TRAIN,
    "download-first": [
        "from torchvision import datasets\n" + IMPORTS + "{example}\n"
        + TRAIN.replace("TensorDataset(torch.randn(8, 2), torch.randn(8, 1))", "train_set"),
        "import json\nimport os\nfrom torch.utils.data import Dataset\n" + IMPORTS
        + "class PTB(Dataset):\n    def __init__(self, root, split):\n        path = os.path.join(root, split + '.json')\n"
          "        if not os.path.exists(path):\n            with open(path, 'w') as f:\n                json.dump([[0.0, 1.0]] * 8, f)\n"
          "        with open(path) as f:\n            self.rows = json.load(f)\n"
          "    def __len__(self):\n        return len(self.rows)\n"
          "    def __getitem__(self, i):\n        return torch.tensor(self.rows[i][:1]), torch.tensor(self.rows[i][1:])\n"
          "datasets, data_dir = {{}}, 'data'\nfor split in ['train', 'valid']:\n{example:4}\n"
        + TRAIN.replace("TensorDataset(torch.randn(8, 2), torch.randn(8, 1))", "datasets['train']"),
        "import os\nfrom filelock import FileLock\nfrom torchvision import datasets\n" + IMPORTS + "{example}\n"
        + TRAIN.replace("TensorDataset(torch.randn(8, 2), torch.randn(8, 1))", "train_set"),
        "import os\nimport tarfile\nimport urllib.request\nfrom torch.utils.data import Dataset\n" + IMPORTS
        + "class Chairs(Dataset):\n    def __init__(self, root):\n        self.root = root\n{example:8}\n"
          "        self.items = sorted(os.listdir(root))\n"
          "    def download(self):\n        urllib.request.urlretrieve('http://example.com/c.tar', 'c.tar')\n"
          "        tar = tarfile.open('c.tar')\n        tar.extractall(self.root)\n        tar.close()\n"
          "    def __len__(self):\n        return len(self.items)\n"
          "    def __getitem__(self, i):\n        return torch.randn(2), torch.randn(1)\n"
          "def get_dataset(name):\n    return eval(name)\n"
        + TRAIN.replace("TensorDataset(torch.randn(8, 2), torch.randn(8, 1))", "get_dataset('Chairs')('data')"),
        "from torchvision import datasets\n" + IMPORTS + MODEL + "\n\ndef fit(model, ds):\n"
        + textwrap.indent(EPOCHS.replace("in loader", "in DataLoader(ds, batch_size=4, shuffle=True)"), "    ")
        + "{example}\n"],
    "shard-data": [
        IMPORTS + "train_set = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))\n{example}\n" + MODEL
        + EPOCHS.replace("in loader", "in train_loader"),
        *["from torch.utils.data import RandomSampler, SequentialSampler, WeightedRandomSampler\n" + IMPORTS
          + "{example}\nloader = DataLoader(ds, batch_size=4, sampler=sampler)\n" + MODEL + EPOCHS] * 3,
        "from torch.utils.data import RandomSampler\n" + IMPORTS + "bs, steps = 4, 2\n{example}\n"
        "loader = DataLoader(ds, batch_size=bs, sampler=sampler)\n" + MODEL + EPOCHS,
        IMPORTS + "{example}\n" + MODEL + EPOCHS,
        IMPORTS + "phases = ['train', 'val']\ndataloaders = {example}\n" + MODEL + BY_PHASE,
        IMPORTS + "ds = {x: TensorDataset(torch.randn(8, 2), torch.randn(8, 1)) for x in ['train', 'val']}\n"
        "{example}\n" + MODEL + BY_PHASE.replace("dataloaders", "loaders").replace("in phases", "in ['train', 'val']")
        .replace("            ((model", "            loss = ((model").replace(".backward()", "\n            if phase == 'train':"
                                                                        "\n                loss.backward()")
        .replace("            opt.step()", "                opt.step()"),
        IMPORTS + "TRAIN = VALID = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))\n"
        "def get_dataloader(ds, shuffle=True):\n    return DataLoader(ds, batch_size=4, shuffle=shuffle)\n"
        "{example}\nvalid_loader = get_dataloader(VALID, shuffle=False)\n" + MODEL
        + EPOCHS.replace("in loader", "in train_loader"),
        IMPORTS + "class Stream(torch.utils.data.IterableDataset):\n    def __init__(self, files):\n"
        "        self.files = files\n\n    def __iter__(self):\n        for name in self.files:\n"
        "            yield torch.randn(2), torch.randn(1)\n\n\nfiles = ['a', 'b']\n{example}\n" + MODEL + EPOCHS,
        IMPORTS + MODEL + "X, y = torch.randn(8, 2), torch.randn(8, 1)\nn, bs, epochs = 8, 4, 2\n{example}\n"
        "        opt.zero_grad()\n        ((model(X[idx]) - y[idx]) ** 2).mean().backward()\n        opt.step()\n",
        IMPORTS + MODEL + "X, y = torch.randn(8, 2), torch.randn(8, 1)\nbs = 4\n{example}\n"
        "    opt.zero_grad()\n    ((model(xb) - yb) ** 2).mean().backward()\n    opt.step()\n",
        IMPORTS + MODEL + "data = torch.randn(64, 2)\n\n\ndef get_batch(split):\n"
        "    ix = torch.randint(len(data) - 4, (4,))\n    return data[ix], data[ix, :1]\n\n\nfor it in range(3):\n"
        "{example:4}\n    opt.zero_grad()\n    ((model(X) - Y) ** 2).mean().backward()\n    opt.step()\n",
        IMPORTS + "class Files(torch.utils.data.Dataset):\n    def __init__(self, names):\n{example:8}\n\n"
        "    def __len__(self):\n        return len(self.files)\n\n    def __getitem__(self, i):\n"
        "        return torch.randn(2), torch.randn(1)\n\n\nloader = DataLoader(Files(['a', 'b']), batch_size=4, "
        "shuffle=True)\n" + MODEL + EPOCHS,
    ],
    "wrap-model": [WRAP, WRAP.replace("{example}\n", SPLIT_LOSS + "emsize, splits = 2, []\nmodel = torch.nn.Linear(2, 1)\n"
                                      "{example}\noptimizer = optim.SGD(list(model.parameters()) + "
                                      "list(criterion.parameters()), lr=0.1)\n"), ENSEMBLE, OWN_WRAP, TEMPERATURE, REPLACED, ALIASED, WRAP],
    "unwrap-model": [WRAPPED] * 5 + [SEQUENTIAL] * 2 + ["import copy\n" + WRAPPED] + [WRAPPED] * 2 + ["i = 1\n" + WRAPPED] + [WRAPPED] * 3 + [
        IMPORTS + TRAIN + "if use_best:\n    model = torch.load('best.pt')\n{example}\n",
        IMPORTS + LOADER + "model = torch.nn.DataParallel(Net())\nmodel.to('cpu')\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + EPOCHS + "{example}\n",
    ] + [IMPORTS + TRAIN.replace("opt", "optimizer") + "{example}\n"] * 4,
    "set-epoch": [IMPORTS + TRAIN_LOADER.split("for epoch")[0] + """

def train(args, model, device, train_loader, optimizer, epoch):
    for x, y in train_loader:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()


{example}
""", IMPORTS + TRAIN_LOADER.split("for epoch")[0] + """

{example}


batches = inf_train_gen()
for step in range(4):
    opt.zero_grad()
    model(next(batches)).mean().backward()
    opt.step()
""", IMPORTS + LOADER + MODEL + """epochs = 2


def reinitialise(m):
    torch.nn.init.xavier_uniform_(m.weight)


{example}
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", IMPORTS + TRAIN_LOADER.split("for epoch")[0] + """

def train_step(x, y):
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()


steps = 4
{example}
""", IMPORTS + TRAIN_LOADER.split("for epoch")[0].replace("train_loader =", "loader =") + """
epochs = 2


def train_step(batch):
    x, y = batch
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()


def train_epoch(loader):
    it = iter(loader)
    for _ in range(len(loader)):
        train_step(next(it))


{example}
""", IMPORTS + TRAIN_LOADER.split("for epoch")[0] + """

class Feeder:
    def __init__(self, loader):
        self.loader = loader
        self.it = iter(loader)

    def draw(self):
        try:
            return next(self.it)
{example:8}
            return next(self.it)


feeder = Feeder(train_loader)
for step in range(4):
    x, y = feeder.draw()
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
""", IMPORTS + MODEL + """

class Data:
    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)


class Trainer:
    def step(self, b):
        x, y = b
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.item()

    def fit(self, dm, epochs):
{example:8}


Trainer().fit(Data(), 2)
"""],
    "accumulate-no-sync": ACCUMULATE,
    "agree-stop": [AGREE_STOP, IMPORTS + MODEL + "class Env:\n    def reset(self):\n        return torch.zeros(2)\n\n"
                   "    def step(self, action):\n        return torch.zeros(2), 1.0, True, {{}}\n\n\nenv = Env()\n"
                   "for episode in range(2):\n    state = env.reset()\n    for t in range(10):\n"
                   "        action = model(state)\n        opt.zero_grad()\n        model(state).sum().backward()\n"
                   "        opt.step()\n{example:8}\n", AGREE_STOP],
    "shard-metrics": [IMPORTS + "phases = ['train', 'val']\nimage_datasets = {{x: TensorDataset(torch.randn(8, 2), torch.randn(8, 1)) for x in phases}}\n"
                      "dataloaders = {{x: DataLoader(image_datasets[x], batch_size=4, shuffle=(x == 'train')) for x in phases}}\n"
                      "dataset_sizes = {{x: len(image_datasets[x]) for x in phases}}\n" + MODEL
                      + "for epoch in range(2):\n    for phase in phases:\n        running_corrects = 0\n{example:8}\n",
                      IMPORTS + LOADER + MODEL + "def evaluate(model, data_loader):\n{example:4}\n" + EPOCHS
                      + "    evaluate(model, loader)\n",
                      *[IMPORTS + TRAIN_LOADER + "loss_fn = torch.nn.functional.mse_loss\n{example}\n"] * 2,
                      IMPORTS + "class AverageMeter:\n    def __init__(self):\n        self.sum, self.count = 0.0, 0\n\n"
                      "    def update(self, val, n=1):\n        self.sum += val * n\n        self.count += n\n"
                      "        self.avg = self.sum / self.count\n\n\n" + TRAIN_LOADER
                      + "loss_fn = torch.nn.functional.mse_loss\n\n\ndef train():\n{example:4}\n\n\ntrain()\n"],
    "shard-eval": "import torch.nn.functional as F\n" + IMPORTS + TRAIN
                  + "test_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randint(0, 2, (8,))), batch_size=4)\n"
                  "{example}\n",
    "main-process-only": ["from tqdm import tqdm\n" + IMPORTS + TRAIN_LOADER.split("for epoch")[0]
                          + "for epoch in range(2):\n{example:4}\n        opt.zero_grad()\n"
                          "        ((model(x) - y) ** 2).mean().backward()\n        opt.step()\n",
                          "import os\n" + IMPORTS + "\n\ndef get_timestamp():\n    return 'now'\n\n\n"
                          "def clone_object(obj):\n{example:4}\n    new = torch.load(filename)\n    os.remove(filename)\n"
                          "    return new\n\n\n" + TRAIN_LOADER + "start = clone_object(model.state_dict())\n",
                          IMPORTS + "{example}\n\n\nwith Tee('train.log', 'w'):\n" + textwrap.indent(TRAIN_LOADER, "    "),
                          "import logging\n" + IMPORTS + TRAIN_LOADER + "log_file_name = 'log.txt'\n{example}\n",
                          "import logging\n" + IMPORTS + "{example}\n" + TRAIN_LOADER,
                          "import logging.config\n" + IMPORTS + "config = {{'version': 1}}\n{example}\n" + TRAIN_LOADER,
                          "import logging.config\n" + IMPORTS + "out = 'runs'\n{example}\n" + TRAIN_LOADER,
                          "from torchvision.utils import save_image\n" + IMPORTS + LOADER
                          + "model = torch.nn.Linear(2, 1)\nnetG = torch.nn.Linear(2, 1)\n"
                          "opt = torch.optim.SGD([*model.parameters(), *netG.parameters()], lr=0.1)\n"
                          + EPOCHS + "{example}\n"],
    "load-map-location": IMPORTS + LOADER + MODEL + "{example}\n" + EPOCHS,
    "agree-plateau": IMPORTS + LOADER + MODEL + "scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\n"
                     "for epoch in range(2):\n    running = 0.0\n    for x, y in loader:\n        opt.zero_grad()\n"
                     "        loss = ((model(x) - y) ** 2).mean()\n        loss.backward()\n        opt.step()\n"
                     "        running += loss.item()\n{example:4}\n",
    "agree-clock": "import os\nimport time\nfrom datetime import datetime\n" + IMPORTS + TRAIN + "{example}\n",
    "agree-search": IMPORTS + "\n\ndef objective(trial):\n{example:4}\n    model = torch.nn.Linear(2, 1)\n"
                    "    opt = torch.optim.SGD(model.parameters(), lr=lr)\n" + textwrap.indent(LOADER, "    ")
                    + "    for x, y in loader:\n        opt.zero_grad()\n        ((model(x) - y) ** 2).mean().backward()\n"
                    "        opt.step()\n    return 0.0\n",
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
