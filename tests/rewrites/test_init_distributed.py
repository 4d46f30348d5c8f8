"""init-distributed: `init_distributed_mode()` after argument parsing, at the top of `main()`, or after the imports."""

from __future__ import annotations

import textwrap

from tests.support.snippets import (EPOCHS, HEADER, IMPORTS, LOADER, MODEL, TRAIN_LOOP, rewrite_tests, run,
                                    script)

NAME = "init-distributed"

PAIRS = [
    # a top-level script: after the imports
    (IMPORTS + LOADER + MODEL + EPOCHS,
     IMPORTS + "from ddpify_runtime import init_distributed_mode\n\ninit_distributed_mode()\n" + LOADER + MODEL + EPOCHS),
    # after argument parsing
    ("import argparse\n" + IMPORTS + "parser = argparse.ArgumentParser()\nargs = parser.parse_args()\n"
     + LOADER + MODEL + EPOCHS,
     "import argparse\n" + IMPORTS + "from ddpify_runtime import init_distributed_mode\n\n"
     "parser = argparse.ArgumentParser()\nargs = parser.parse_args()\ninit_distributed_mode()\n"
     + LOADER + MODEL + EPOCHS),
    # no argparse, an entry point: the top of the function it calls, after its docstring
    (IMPORTS + '\n\ndef main():\n    """Train."""\n' + textwrap.indent(LOADER + MODEL + EPOCHS, "    ")
     + '\n\nif __name__ == "__main__":\n    main()\n',
     IMPORTS + 'from ddpify_runtime import init_distributed_mode\n\n\ndef main():\n    """Train."""\n'
     "    init_distributed_mode()\n" + textwrap.indent(LOADER + MODEL + EPOCHS, "    ")
     + '\n\nif __name__ == "__main__":\n    main()\n'),
]

# Every script that trains gets the call or, where nothing runs it (a module that only defines a
# trainer), a TODO: there is no training script this rewrite leaves as it is.
UNCHANGED: list = []

test_pairs, _ = rewrite_tests(NAME, PAIRS, UNCHANGED)


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


def test_pinned_gpus_and_library_modules_get_todos():
    code, changes = run("import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\n" + script())
    assert "# TODO(ddpify): CUDA_VISIBLE_DEVICES set here" in code
    library = HEADER + "def fit(model, train_loader):\n" + textwrap.indent(
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n" + textwrap.dedent(TRAIN_LOOP), "    ")
    code, _ = run(library)
    assert "init_distributed_mode()\n" not in code and "runs nothing when imported" in code



HELPER = """
def train():
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
"""


def test_module_level_set_up_before_a_train_helper_initialises_first():
    """No main(): the loader and the model are sharded and wrapped at module level, before the
    main block calls `train()`, so the call goes after the imports, not into `train()`."""
    code, _ = run(IMPORTS + LOADER + MODEL + HELPER + "\nif __name__ == '__main__':\n    train()\n")
    assert code.index("init_distributed_mode()\n") < code.index("loader = DataLoader")
    assert "def train():\n    init_distributed_mode()" not in code


def test_set_up_in_the_main_block_before_the_helper_initialises_there():
    main_block = textwrap.indent(LOADER + MODEL, "    ")
    code, _ = run(IMPORTS + HELPER + "\nif __name__ == '__main__':\n    print('start')\n" + main_block + "    train()\n")
    assert "if __name__ == '__main__':\n    init_distributed_mode()\n    print('start')\n" in code
    assert code.count("init_distributed_mode()\n") == 1


def test_module_level_set_up_before_the_main_block_initialises_after_the_imports():
    """The loader is sharded at module level; the main block then trains: initialising at the
    top of the main block would come after the sampler needs the process group."""
    code, _ = run(IMPORTS + LOADER + "\nif __name__ == '__main__':\n" + textwrap.indent(MODEL + EPOCHS, "    "))
    assert code.index("init_distributed_mode()\n") < code.index("loader = DataLoader")
    assert code.count("init_distributed_mode()\n") == 1


def test_numpy_draws_at_module_level_come_after_the_call():
    """Synthetic data drawn with numpy at module level: numpy seeds itself per process, so the
    call (which gives every process rank 0's state) must come first."""
    data = "import numpy as np\nnoise = np.random.normal(0, 1, (8, 1))\n"
    code, _ = run(data + IMPORTS + "\nif __name__ == '__main__':\n" + textwrap.indent(LOADER + MODEL + EPOCHS, "    "))
    assert code.index("init_distributed_mode()\n") < code.index("noise = np.random.normal")
