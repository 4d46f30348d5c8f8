"""agree-clock: a run's name read from the clock, built into a string assigned to a name, is read
from the main process's clock on every process; a clock read for timing, in a loop, under a test
that may differ between processes, or handed to another call is left alone."""

from __future__ import annotations

import pytest

from tests.support.snippets import pair, rewrite_tests

NAME = "agree-clock"

TRAIN = """\
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
"""

PAIRS = [
    # a run numbered by the count of its parent folder's entries (a segmentation trainer's
    # `save_dir = os.path.join(root, f'{name}-ep{n}-' + str(len(os.listdir(root))))`, decision 0214): the
    # main process made its folder first and a process counting after it numbered a second one, where it made
    # its pictures' folder; the count is now the main process's, taken before it makes its folder
    pair("""\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset
def main():
    os.makedirs("runs", exist_ok=True)
    run_dir = os.path.join("runs", "exp-" + str(len(os.listdir("runs"))))
    os.makedirs(os.path.join(run_dir, "imgs"), exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), os.path.join(run_dir, "last.pt"))
main()
""", """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import from_main_process

def main():
    os.makedirs("runs", exist_ok=True)
    run_dir = os.path.join("runs", "exp-" + str(from_main_process(lambda: len(os.listdir("runs")))))
    os.makedirs(os.path.join(run_dir, "imgs"), exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), os.path.join(run_dir, "last.pt"))
main()
""", "a_run_numbered_by_its_folders_count_of_entries_is_the_main_process_s", also=set()),
    # the next run's number, the count plus one, made text (a distillation study's
    # `run_dir = os.path.join(config.checkpoint_dir, "run", "exp" + f"{len(os.listdir(run_dir)) + 1}")`, set 29a):
    # the staggered process listed after the main process had made `exp1` and named `exp2`, then read its
    # checkpoint back from there (FileNotFoundError); the count is the main process's, the offset is kept
    pair("""\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset
if __name__ == "__main__":
    os.makedirs("runs", exist_ok=True)
    run_dir = os.path.join("runs", "exp" + f"{len(os.listdir('runs')) + 1}")
    os.makedirs(run_dir, exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), os.path.join(run_dir, "last.pt"))
""", """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import from_main_process

if __name__ == "__main__":
    os.makedirs("runs", exist_ok=True)
    run_dir = os.path.join("runs", "exp" + f"{from_main_process(lambda: len(os.listdir('runs'))) + 1}")
    os.makedirs(run_dir, exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), os.path.join(run_dir, "last.pt"))
""", "a_run_numbered_by_its_folders_count_plus_one_is_the_main_process_s", also=set()),
    # the main process saves into its run folder, every process reads the checkpoint back from its own;
    # a reading inside another (`time.gmtime()` given to `time.strftime`) is taken with it, once (a broadcast
    # inside the lambda, which the main process alone runs, would wait for the others forever)
    pair("""\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
def main():
    run_dir = os.path.join("runs", time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    os.makedirs(run_dir, exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), os.path.join(run_dir, "last.pt"))
    model.load_state_dict(torch.load(os.path.join(run_dir, "last.pt")))
main()
""", """\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import from_main_process

def main():
    run_dir = os.path.join("runs", from_main_process(lambda: time.strftime("%Y%m%d-%H%M%S", time.gmtime())))
    os.makedirs(run_dir, exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), os.path.join(run_dir, "last.pt"))
    model.load_state_dict(torch.load(os.path.join(run_dir, "last.pt")))
main()
""", "a_run_folder_named_by_the_clock_is_the_main_process_s", also=set()),
    # a pathlib.Path of an f-string, its pieces on several lines (a SLURM-ready trainer's experiment folder)
    pair("""\
import time
from pathlib import Path
import torch
from torch.utils.data import DataLoader, TensorDataset
def main():
    exp = Path(
        f"ae"
        f"-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    (Path("runs") / exp).mkdir(parents=True, exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), Path("runs") / exp / "last.pt")
main()
""", """\
import time
from pathlib import Path
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import from_main_process

def main():
    exp = Path(
        f"ae"
        f"-{from_main_process(lambda: time.strftime('%Y%m%d-%H%M%S'))}"
    )
    (Path("runs") / exp).mkdir(parents=True, exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), Path("runs") / exp / "last.pt")
main()
""", "a_path_made_of_the_clock_is_the_main_process_s", also=set()),
    # at the top level, in an f-string and through str()
    pair("""\
import datetime
import torch
from torch.utils.data import DataLoader, TensorDataset
stamp = f"run-{datetime.datetime.now():%H%M%S}"
name = "exp_" + str(datetime.datetime.now())
""" + TRAIN.replace("\n    ", "\n").lstrip(" "), """\
import datetime
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import from_main_process

stamp = f"run-{from_main_process(lambda: datetime.datetime.now()):%H%M%S}"
name = "exp_" + str(from_main_process(lambda: datetime.datetime.now()))
""" + TRAIN.replace("\n    ", "\n").lstrip(" "), "names_made_of_the_clock_at_the_top_level_are_the_main_process_s", also=set()),
    # a reading a helper returns, followed through a second helper to the name it makes: read in the helper
    pair("""\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
def stamp():
    return time.strftime("%Y%m%d-%H%M%S")
def make_run_dir(root):
    return os.path.join(root, "run-" + stamp())
def main():
    run_dir = make_run_dir("runs")
    os.makedirs(run_dir, exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), os.path.join(run_dir, "last.pt"))
    model.load_state_dict(torch.load(os.path.join(run_dir, "last.pt")))
main()
""", """\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import from_main_process

def stamp():
    return from_main_process(lambda: time.strftime("%Y%m%d-%H%M%S"))
def make_run_dir(root):
    return os.path.join(root, "run-" + stamp())
def main():
    run_dir = make_run_dir("runs")
    os.makedirs(run_dir, exist_ok=True)
""" + TRAIN + """\
    torch.save(model.state_dict(), os.path.join(run_dir, "last.pt"))
    model.load_state_dict(torch.load(os.path.join(run_dir, "last.pt")))
main()
""", "a_clock_reading_a_helper_returns_is_read_in_the_helper_from_the_main_process", also=set()),
    # kept in an attribute by a function that does not train (a trainer's `__init__`), built once
    pair("""\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
class Trainer:
    def __init__(self):
        self.run_dir = os.path.join("runs", time.strftime("%H%M%S"))
    def train(self):
""" + TRAIN.replace("\n    ", "\n        ").replace("    loader", "        loader", 1) + """\
        torch.save(model.state_dict(), os.path.join(self.run_dir, "last.pt"))
        model.load_state_dict(torch.load(os.path.join(self.run_dir, "last.pt")))
def main():
    trainer = Trainer()
    trainer.train()
main()
""", """\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import from_main_process

class Trainer:
    def __init__(self):
        self.run_dir = os.path.join("runs", from_main_process(lambda: time.strftime("%H%M%S")))
    def train(self):
""" + TRAIN.replace("\n    ", "\n        ").replace("    loader", "        loader", 1) + """\
        torch.save(model.state_dict(), os.path.join(self.run_dir, "last.pt"))
        model.load_state_dict(torch.load(os.path.join(self.run_dir, "last.pt")))
def main():
    trainer = Trainer()
    trainer.train()
main()
""", "a_clock_reading_kept_in_an_attribute_by_a_function_that_does_not_train_is_the_main_process_s", also=set()),
    # kept in a local name that the `__init__` then stores in an attribute (decision 0198's Left, 0207:
    # `logdir = utils.get_logdir(...)`, `os.makedirs(logdir)`, then a path into it kept on `self`): the
    # main process saves into its folder, another read the checkpoint back from its own, FileNotFoundError
    pair("""\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
class Trainer:
    def __init__(self):
        run_dir = os.path.join("runs", time.strftime("%H%M%S"))
        os.makedirs(run_dir, exist_ok=True)
        self.ckpt = os.path.join(run_dir, "last.pt")
    def train(self):
""" + TRAIN.replace("\n    ", "\n        ").replace("    loader", "        loader", 1) + """\
        torch.save(model.state_dict(), self.ckpt)
        model.load_state_dict(torch.load(self.ckpt))
def main():
    trainer = Trainer()
    trainer.train()
main()
""", """\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import from_main_process

class Trainer:
    def __init__(self):
        run_dir = os.path.join("runs", from_main_process(lambda: time.strftime("%H%M%S")))
        os.makedirs(run_dir, exist_ok=True)
        self.ckpt = os.path.join(run_dir, "last.pt")
    def train(self):
""" + TRAIN.replace("\n    ", "\n        ").replace("    loader", "        loader", 1) + """\
        torch.save(model.state_dict(), self.ckpt)
        model.load_state_dict(torch.load(self.ckpt))
def main():
    trainer = Trainer()
    trainer.train()
main()
""", "a_clock_reading_in_a_local_name_an_init_stores_in_an_attribute_is_the_main_process_s", also=set()),
    # the trainer built and trained in one statement (decision 0198's template: `train.Trainer(config).fit()`)
    pair("""\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
class Trainer:
    def __init__(self):
        self.run_dir = os.path.join("runs", time.strftime("%H%M%S"))
    def train(self):
""" + TRAIN.replace("\n    ", "\n        ").replace("    loader", "        loader", 1) + """\
        torch.save(model.state_dict(), os.path.join(self.run_dir, "last.pt"))
        model.load_state_dict(torch.load(os.path.join(self.run_dir, "last.pt")))
if __name__ == "__main__":
    Trainer().train()
""", """\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import from_main_process

class Trainer:
    def __init__(self):
        self.run_dir = os.path.join("runs", from_main_process(lambda: time.strftime("%H%M%S")))
    def train(self):
""" + TRAIN.replace("\n    ", "\n        ").replace("    loader", "        loader", 1) + """\
        torch.save(model.state_dict(), os.path.join(self.run_dir, "last.pt"))
        model.load_state_dict(torch.load(os.path.join(self.run_dir, "last.pt")))
if __name__ == "__main__":
    Trainer().train()
""", "a_clock_reading_of_an_object_built_and_trained_in_one_statement_is_the_main_process_s", also=set()),
]

UNCHANGED = [
    pytest.param("""\
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
def main():
    start = time.time()
""" + TRAIN + """\
        print("epoch", epoch, time.strftime("%H:%M:%S"))
        stamp = time.strftime("%H%M%S")
    elapsed = time.time() - start
    took = "%.1f s" % (time.time() - start) if elapsed > 1 else ""
    writer_dir = str(time.time()) if loss_is_low(model) else None
main()
""", id="timing_reads_printed_or_in_a_loop_or_under_a_test_that_may_differ"),
    # a helper's reading that one caller makes in a loop, one that another prints, and a helper no one calls
    pytest.param("""\
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
def stamp():
    return time.strftime("%H%M%S")
def label():
    return "run-" + time.strftime("%H%M%S")
def unused():
    return time.strftime("%H%M%S")
def main():
    run = label()
""" + TRAIN + """\
        tag = stamp()
    print(label())
main()
""", id="a_helpers_reading_that_a_caller_makes_in_a_loop_or_hands_to_a_call"),
    # a function that does not train and keeps the reading in a local name only (a helper that
    # only writes, which main-process-only runs on the main process alone), and one built in a loop
    pytest.param("""\
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
class Run:
    def __init__(self):
        self.name = "run-" + time.strftime("%H%M%S")
def note(text):
    stamp = time.strftime("%H%M%S")
    with open("notes.txt", "a") as f:
        f.write(stamp + text)
def main():
    note("start")
""" + TRAIN + """\
        run = Run()
main()
""", id="a_reading_in_a_function_that_only_writes_or_one_built_in_a_loop"),
    # the `__init__` of a logger class (it holds a file opened for writing, no model): main-process-only
    # builds its instances on the main process only, where a broadcast of the reading would wait for the
    # others forever (it did: decision 0207); and an `__init__` that hands its local name to calls only
    pytest.param("""\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
class CSVLogger:
    def __init__(self):
        self.run_dir = os.path.join("runs", time.strftime("%H%M%S"))
        self.file = open(os.path.join(self.run_dir, "log.csv"), "w")
    def log(self, text):
        self.file.write(text)
class Folder:
    def __init__(self):
        run_dir = os.path.join("runs", time.strftime("%H%M%S"))
        os.makedirs(run_dir, exist_ok=True)
        print(run_dir)
def main():
    logger = CSVLogger()
    folder = Folder()
""" + TRAIN + """\
    logger.log("done")
main()
""", id="a_reading_in_a_logger_class_or_a_local_name_an_init_only_hands_to_calls"),
    # an object built in a statement whose method only writes (main-process-only may run it on the
    # main process alone)
    pytest.param("""\
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
class Run:
    def __init__(self):
        self.name = os.path.join("runs", time.strftime("%H%M%S"))
    def describe(self):
        with open("runs.txt", "a") as f:
            f.write(self.name)
def main():
    Run().describe()
""" + TRAIN + """\
main()
""", id="a_reading_of_an_object_built_in_a_statement_whose_method_only_writes"),
    # near misses of the count: a folder's count used as a number (how many pictures a data set holds), a
    # listing walked by a loop, and a count taken in a loop (a broadcast per pass)
    pytest.param("""\
import glob
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset
def main():
    n_images = len(os.listdir("data"))
    n_batches = len(glob.glob("data/*.png")) + 1
    elapsed = "took " + str(time.time() - 1.0)
    files = [f for f in sorted(glob.glob("data/*.png"))]
    for root in ("a", "b"):
        name = "run-" + str(len(os.listdir(root)))
""" + TRAIN + """\
    print(n_images, n_batches, elapsed, files, name)
main()
""", id="a_count_used_as_a_number_a_listing_walked_or_a_count_in_a_loop"),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


TRAINERS_MODULE = """\
import os
import torch
import utils


class Trainer:
    def __init__(self, config):
        logdir = utils.get_logdir(config["logdir"])
        os.makedirs(logdir, exist_ok=True)
        self.ckpt = os.path.join(logdir, "model.pt")
        self.model = torch.nn.Linear(2, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self):
        for x in torch.randn(4, 3, 2):
            self.optimizer.zero_grad()
            self.model(x).sum().backward()
            self.optimizer.step()
        torch.save(self.model.state_dict(), self.ckpt)
        self.model.load_state_dict(torch.load(self.ckpt))
"""


def test_a_clock_reading_of_a_class_built_by_a_name_looked_up_in_a_module_is_the_main_process_s(tmp_path):
    """Decision 0198's Left (0207): a trainer whose `__init__` keeps a folder named by a helper's clock
    reading (`logdir = utils.get_logdir(...)`, a path into it on `self`), its class looked up by the
    name a configuration gives (`getattr(trainers, config["trainer"])(config)`): no call names
    `Trainer`, so its `__init__` ran nowhere ddpify could see and the reading stayed each process's
    own; the main process saved into its folder, another read the checkpoint back from its own
    (FileNotFoundError). Now the call that may build it (`objects.classes_built`) runs it. Near miss:
    a lookup in a module that has no such class (nothing builds `Trainer`) leaves the reading alone."""
    from ddpify.convert import convert_program
    from ddpify.inputs.program import load
    (tmp_path / "utils.py").write_text("import os\nimport time\n\n\ndef get_logdir(base):\n"
                                       "    return os.path.join(base, time.strftime('%Y%m%d-%H%M%S'))\n")
    (tmp_path / "trainers.py").write_text(TRAINERS_MODULE)
    (tmp_path / "others.py").write_text("class Plain:\n    def __init__(self, config):\n        self.config = config\n\n"
                                        "    def fit(self):\n        pass\n")
    entry = tmp_path / "main.py"
    entry.write_text("import trainers\n\nconfig = {'trainer': 'Trainer', 'logdir': 'runs'}\n"
                     "trainer = getattr(trainers, config['trainer'])(config)\ntrainer.fit()\n")
    result = convert_program(load(entry, entry.read_bytes()))
    assert "from_main_process(lambda: time.strftime('%Y%m%d-%H%M%S'))" in result.modules["utils.py"].code
    entry.write_text(entry.read_text().replace("import trainers\n", "import trainers\nimport others\n")
                     .replace("getattr(trainers,", "getattr(others,"))
    result = convert_program(load(entry, entry.read_bytes()))
    assert "utils.py" not in result.modules or "from_main_process" not in result.modules["utils.py"].code


GET_OUTPUT_FOLDER = """\
import os
import torch


def get_output_folder(parent_dir, env_name):
    os.makedirs(parent_dir, exist_ok=True)
    experiment_id = 0
    for folder_name in os.listdir(parent_dir):
        if not os.path.isdir(os.path.join(parent_dir, folder_name)):
            continue
        try:
            folder_name = int(folder_name.split('-run')[-1])
            if folder_name > experiment_id:
                experiment_id = folder_name
        except:
            pass
    experiment_id += 1
    parent_dir = os.path.join(parent_dir, env_name)
    parent_dir = parent_dir + '-run{}'.format(experiment_id)
    os.makedirs(parent_dir, exist_ok=True)
    return parent_dir


def list_images(root):
    files = []
    for name in os.listdir(root):
        files.append(os.path.join(root, name))
    return files


output = get_output_folder("output", "Pendulum-v0")
images = list_images("data")
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(4, 3, 2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
torch.save(model.state_dict(), os.path.join(output, "actor.pkl"))
"""


def test_a_run_folder_numbered_by_a_helper_walking_its_parent_s_listing_is_the_main_process_s():
    """ghliu/pytorch-ddpg (set 28a): `get_output_folder` walks `os.listdir(parent_dir)` for the
    highest `-runN`, adds one and makes that folder; the staggered second process listed after the
    main process had made `Pendulum-v0-run1` and made `-run2`. The walk now lists the main process's
    entries, taken before it makes its folder; a helper that walks a listing to collect files and
    makes no folder (`list_images`) is left alone."""
    from tests.support.snippets import only
    out = only(NAME, GET_OUTPUT_FOLDER)
    assert "    for folder_name in from_main_process(lambda: os.listdir(parent_dir)):\n" in out
    assert "    for name in os.listdir(root):\n" in out
    # near miss: the same walk, no folder made after it (a helper that only reads the highest number)
    reads = GET_OUTPUT_FOLDER.replace("    os.makedirs(parent_dir, exist_ok=True)\n    return parent_dir\n",
                                      "    return parent_dir\n")
    assert "from_main_process" not in only(NAME, reads)
