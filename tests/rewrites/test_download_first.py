"""download-first: `download=True` data sets are fetched by each node's first process first."""

from __future__ import annotations

import textwrap

from tests.support.snippets import EPOCHS, IMPORTS, MODEL, rewrite_tests, run, script

NAME = "download-first"

DOWNLOADS = ("ds = datasets.MNIST('data', train=True, download=True)\n"
             "val = datasets.MNIST('data', train=False, download=True)\n")
REST = "loader = DataLoader(ds, batch_size=4, shuffle=True)\n" + MODEL + EPOCHS

PAIRS = [
    # adjacent downloads share one block
    ("from torchvision import datasets\n" + IMPORTS + DOWNLOADS + REST,
     "from torchvision import datasets\n" + IMPORTS + "from ddpify_runtime import main_process_first\n\n"
     "with main_process_first():\n" + textwrap.indent(DOWNLOADS, "    ") + REST),
]

UNCHANGED = [
    "from torchvision import datasets\n" + IMPORTS + "ds = datasets.MNIST('data', train=True, download=False)\n" + REST,
    "from torchvision import datasets\n" + IMPORTS + "ds = datasets.MNIST('data', train=True)\n" + REST,
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


def test_dataset_downloads_run_on_the_first_process_of_each_node_first():
    code, _ = run("from torchvision import datasets\n" + script(
        loader="ds = datasets.MNIST('data', train=True, download=True)\n"
               "val = datasets.MNIST('data', train=False, download=True)\n"
               "train_loader = DataLoader(ds, batch_size=4, shuffle=True)"))
    assert ("with main_process_first():\n    ds = datasets.MNIST('data', train=True, download=True)\n"
            "    val = datasets.MNIST('data', train=False, download=True)\n") in code
