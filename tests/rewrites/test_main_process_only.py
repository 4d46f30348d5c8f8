"""main-process-only: file writes, checkpoints, loggers and progress bars on the main process only."""

from __future__ import annotations

import pytest

from tests.support.snippets import SCRIPT, TRAINS, only, pair, rewrite_tests, rewritten, unchanged, warnings

NAME = "main-process-only"

PAIRS = [
    # issue 27 (sweep 19c's few-shot GNN: `mkdir(args.log_root)` of its utils, then a barrier said "after the
    # save: the file is read back below"): a helper of the program that only makes folders is a folder maker
    pair("""\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset


def mkdir(path):
    if not os.path.exists(path):
        os.mkdir(path)


mkdir("runs")
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
if os.path.exists(os.path.join("runs", "model.pt")):
    model.load_state_dict(torch.load(os.path.join("runs", "model.pt")))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
torch.save(model.state_dict(), os.path.join("runs", "model.pt"))
""", """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import atomic_write, barrier, is_main_process


def mkdir(path):
    if not os.path.exists(path):
        os.mkdir(path)


if is_main_process():
    mkdir("runs")
barrier()
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
if os.path.exists(os.path.join("runs", "model.pt")):
    model.load_state_dict(torch.load(os.path.join("runs", "model.pt")))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
if is_main_process():
    with atomic_write(os.path.join("runs", "model.pt")) as tmp_path:
        torch.save(model.state_dict(), tmp_path)
""", "a_helper_that_only_makes_a_folder_is_said_to_make_one", report=[
        "change: mkdir() runs on the main process only",
        "change: barrier() after it: the folder is used below",
        "change: torch.save runs on the main process only",
        "change: `os.path.join(\"runs\", \"model.pt\")` written whole or not at all (a temporary file renamed over it)",
    ]),
    # issue 27 (sweep 24b's TD3 agent: `if not os.path.exists('model'): os.mkdir('model')` on one line, its
    # checkpoints loaded from the folder below; decision 0185): the barrier after that `if` was recorded as "after
    # the save: the file is read back below", the one-line `if` itself being the write whose folder is used
    pair("""\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset

if not os.path.exists("runs"): os.mkdir("runs")
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
if os.path.exists(os.path.join("runs", "model.pt")):
    model.load_state_dict(torch.load(os.path.join("runs", "model.pt")))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import barrier, is_main_process

if not os.path.exists("runs") and is_main_process(): os.mkdir("runs")
barrier()
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
if os.path.exists(os.path.join("runs", "model.pt")):
    model.load_state_dict(torch.load(os.path.join("runs", "model.pt")))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", "a_folder_made_by_a_one_line_if_is_said_to_be_used_below", report=[
        "change: os.mkdir runs on the main process only",
        "change: barrier() after it: the folder is used below",
    ]),
    # near miss: a one-line `if` that saves a file read back below is still said to be a save; the save is
    # written whole in a block of its own (it was guarded and left a plain save; decision 0185)
    pair("""\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(2, 1)
if not os.path.exists("init.pt"): torch.save(model.state_dict(), "init.pt")
model.load_state_dict(torch.load("init.pt"))
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset
from ddpify_runtime import atomic_write, barrier, is_main_process

model = torch.nn.Linear(2, 1)
if not os.path.exists("init.pt") and is_main_process():
    with atomic_write("init.pt") as tmp_path:
        torch.save(model.state_dict(), tmp_path)
barrier()
model.load_state_dict(torch.load("init.pt"))
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", "a_save_by_a_one_line_if_read_back_below_is_still_said_to_be_a_save", report=[
        "change: torch.save runs on the main process only",
        "change: `\"init.pt\"` written whole or not at all (a temporary file renamed over it)",
        "change: barrier() after the save: the file is read back below",
    ]),
    # adjacent writes share one guard; the checkpoint is written to a temporary file and renamed
    pair("""\
torch.save(model.state_dict(), "m.pt")
with open("log.txt", "a") as f:
    f.write(f"{epoch}\\n")
""", """\
from ddpify_runtime import atomic_write, is_main_process

if is_main_process():
    with atomic_write("m.pt") as tmp_path:
        torch.save(model.state_dict(), tmp_path)
    with open("log.txt", "a") as f:
        f.write(f"{epoch}\\n")
""", "adjacent_writes_share_one_guard", scaffold=TRAINS.end_of_epoch),
    # two saves in one `if` whose test the guard extends (ADDA's per-epoch critic and target encoder;
    # decision 0167): both written whole (the second was left a plain save, the report naming the first)
    pair("""\
if (epoch + 1) % 2 == 0:
    torch.save(model.state_dict(), "m-{}.pt".format(epoch))
    torch.save(optimizer.state_dict(), "o-{}.pt".format(epoch))
""", """\
from ddpify_runtime import atomic_write, is_main_process

if (epoch + 1) % 2 == 0 and is_main_process():
    with atomic_write("m-{}.pt".format(epoch)) as tmp_path:
        torch.save(model.state_dict(), tmp_path)
    with atomic_write("o-{}.pt".format(epoch)) as tmp_path:
        torch.save(optimizer.state_dict(), tmp_path)
""", "two_saves_in_an_if_the_guard_extends_are_both_written_whole", scaffold=TRAINS.end_of_epoch, report=[
        "change: torch.save runs on the main process only",
        "change: `\"m-{}.pt\".format(epoch)` written whole or not at all (a temporary file renamed over it)",
        "change: `\"o-{}.pt\".format(epoch)` written whole or not at all (a temporary file renamed over it)",
    ]),
    # a save into a handle the program opened (AWD-LSTM's `model_save`: `with open(fn, 'wb') as f:
    # torch.save([model, criterion, optimizer], f)`) is guarded, and left as written: `atomic_write(f)`
    # of the handle wrote into it as it was, and the report said "written whole or not at all"
    pair("""\
with open("m.pt", "wb") as f:
    torch.save(model.state_dict(), f)
handle = open("o.pt", "wb")
torch.save(optimizer.state_dict(), handle)
""", """\
from ddpify_runtime import is_main_process, open_on_main

if is_main_process():
    with open("m.pt", "wb") as f:
        torch.save(model.state_dict(), f)
handle = open_on_main("o.pt", "wb")
if is_main_process():
    torch.save(optimizer.state_dict(), handle)
""", "a_save_into_a_handle_the_program_opened_is_guarded_not_written_atomically", scaffold=TRAINS.at_end),
    # a blank line between two guarded writes at the top level stays blank, with no indentation left on it
    pair("""\
torch.save(model.state_dict(), "m.pt")

torch.save(optimizer.state_dict(), "o.pt")
""", """\
from ddpify_runtime import atomic_write, is_main_process

if is_main_process():
    with atomic_write("m.pt") as tmp_path:
        torch.save(model.state_dict(), tmp_path)

    with atomic_write("o.pt") as tmp_path:
        torch.save(optimizer.state_dict(), tmp_path)
""", "a_blank_line_between_guarded_writes_stays_blank", scaffold=TRAINS.at_end),
    # an `if` written on one line whose body writes is guarded by its own condition (sfujim/TD3:
    # `if args.save_model: policy.save(...)` left every process writing, and nothing said so); its save
    # is written whole, in a block of its own (decision 0185)
    pair("""\
if epoch % 2 == 0: torch.save(model.state_dict(), "m.pt")  # every other epoch
""", """\
from ddpify_runtime import atomic_write, is_main_process

if epoch % 2 == 0 and is_main_process():  # every other epoch
    with atomic_write("m.pt") as tmp_path:
        torch.save(model.state_dict(), tmp_path)
""", "a_one_line_if_that_writes_takes_the_guard_in_its_condition", scaffold=TRAINS.end_of_epoch),
    pair("""\
def save(path):
    torch.save(model.state_dict(), path)


if epoch % 2 == 0: save("m.pt")
""", """\
from ddpify_runtime import atomic_write, is_main_process

def save(path):
    with atomic_write(path) as tmp_path:
        torch.save(model.state_dict(), tmp_path)


if epoch % 2 == 0 and is_main_process(): save("m.pt")
""", "a_one_line_if_that_calls_a_helper_that_only_writes_takes_the_guard", scaffold=TRAINS.end_of_epoch),
    # a stray comma after the save (`torch.save(...),`: a tuple of the call) hides no write
    pair("""\
torch.save(model.state_dict(), "m.pt"),
""", """\
from ddpify_runtime import is_main_process

if is_main_process():
    torch.save(model.state_dict(), "m.pt"),
""", "a_save_followed_by_a_stray_comma_is_a_write", scaffold=TRAINS.end_of_epoch),
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

import json
torch.save(model.state_dict(), "a.pt")
with open("log.json", "w") as f:
    json.dump({}, f)
if epoch == 2:
    torch.save(model.state_dict(), "b.pt")
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import atomic_write, device_ids, is_main_process

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

import json
if is_main_process():
    with atomic_write("a.pt") as tmp_path:
        torch.save(model.module.state_dict(), tmp_path)
    with open("log.json", "w") as f:
        json.dump({}, f)
if epoch == 2 and is_main_process():
    with atomic_write("b.pt") as tmp_path:
        torch.save(model.module.state_dict(), tmp_path)
""", "writes_are_guarded_together_and_a_sole_body_if_absorbs_the_guard", also={"unwrap-model"}, scaffold=SCRIPT.instead_of("optimizer", "loop")),
    pair("""\
from tqdm import tqdm
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter()
def save(path):
    torch.save(model.state_dict(), path)
    print("saved")
for epoch in range(3):
    for x, y in tqdm(train_loader):
        loss_fn(model(x), y).backward()
        writer.add_scalar("loss", 1.0)
    save("m.pt")
""", """\
from ddpify_runtime import atomic_write, is_main_process

from tqdm import tqdm
from torch.utils.tensorboard import SummaryWriter

writer = SummaryWriter() if is_main_process() else None
def save(path):
    with atomic_write(path) as tmp_path:
        torch.save(model.state_dict(), tmp_path)
    print("saved")
for epoch in range(3):
    for x, y in tqdm(train_loader, disable=not is_main_process()):
        loss_fn(model(x), y).backward()
        if is_main_process():
            writer.add_scalar("loss", 1.0)
    if is_main_process():
        save("m.pt")
""", "loggers_bars_and_helpers_that_only_write", scaffold=SCRIPT.instead_of("loop")),
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

torch.save(model.state_dict(), "m.pt")
state = torch.load("m.pt", weights_only=True)
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import atomic_write, barrier, device_ids, is_main_process, local_device

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

if is_main_process():
    with atomic_write("m.pt") as tmp_path:
        torch.save(model.module.state_dict(), tmp_path)
barrier()
state = torch.load("m.pt", weights_only=True, map_location=local_device())
""", "save_then_reload_waits_for_the_file_and_loads_onto_the_local_device", also={"load-map-location", "unwrap-model"}, scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # archives and pickles read back (torchmf's downloaded zip opened by zipfile.ZipFile): the
    # others waited for no write they read; an archive opened for writing (zipfile.ZipFile(p, "w"),
    # tarfile.open(p, "w:gz")) was written by every process at once
    pair("""\
import tarfile
import zipfile
import joblib
joblib.dump({"steps": 2}, "stats.pkl")
stats = joblib.load("stats.pkl")
with zipfile.ZipFile("run.zip", "w") as z:
    z.write("stats.pkl")
with zipfile.ZipFile("run.zip") as z:
    print(z.namelist())
with tarfile.open("run.tar.gz", "w:gz") as tar:
    tar.add("stats.pkl")
""", """\
from ddpify_runtime import barrier, is_main_process

import tarfile
import zipfile
import joblib
if is_main_process():
    joblib.dump({"steps": 2}, "stats.pkl")
barrier()
stats = joblib.load("stats.pkl")
if is_main_process():
    with zipfile.ZipFile("run.zip", "w") as z:
        z.write("stats.pkl")
barrier()
with zipfile.ZipFile("run.zip") as z:
    print(z.namelist())
if is_main_process():
    with tarfile.open("run.tar.gz", "w:gz") as tar:
        tar.add("stats.pkl")
""", "archives_and_pickles_written_once_and_waited_for_where_they_are_read_back", scaffold=SCRIPT.at_end),
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

torch.save(model(torch.randn(1, 2)), "sample.pt")
def dump():
    out = model(torch.randn(1, 2))
    torch.save(out, "dump.pt")
dump()
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import atomic_write, device_ids, is_main_process

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

if is_main_process():
    with atomic_write("sample.pt") as tmp_path:
        torch.save(model.module(torch.randn(1, 2)), tmp_path)
def dump():
    out = model(torch.randn(1, 2))
    if is_main_process():
        with atomic_write("dump.pt") as tmp_path:
            torch.save(out, tmp_path)
dump()
""", "a_forward_inside_a_guarded_write_bypasses_ddp", also={"wrap-model"}, scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # issue 27 (sweep 30a's large-batch GAN: `if self.iter % self.summary_interval == 0: summary_grid_image(
    # self.summary_writer, self.gen_model(self.fixed_noise).detach(), ...)`, an `if` whose body only writes, so
    # that its test takes the guard): the forward in that body ran through DDP on the main process alone (its
    # buffers' broadcast waits for the others); the test's own forward runs on every process and keeps the wrapper
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    if model(torch.randn(1, 2)).sum().item() > 0:
        torch.save(model(torch.randn(1, 2)), "sample.pt")
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import atomic_write, device_ids, is_main_process

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    if model(torch.randn(1, 2)).sum().item() > 0 and is_main_process():
        with atomic_write("sample.pt") as tmp_path:
            torch.save(model.module(torch.randn(1, 2)), tmp_path)
""", "a_forward_in_the_body_of_an_if_whose_test_takes_the_guard_bypasses_ddp", also={"wrap-model"},
         scaffold=SCRIPT.instead_of("optimizer", "loop")),
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

import json
with open("vocab.json", "w") as f:
    vocab = sorted(set("abc"))
    json.dump(vocab, f)
print(len(vocab))
torch.save(model, "whole.pt")
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import atomic_write, device_ids, is_main_process

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

import json
# TODO(ddpify): every process writes this file, because the block also sets `vocab`, used below: compute that outside the block and guard the write with is_main_process()
with open("vocab.json", "w") as f:
    vocab = sorted(set("abc"))
    json.dump(vocab, f)
print(len(vocab))
if is_main_process():
    with atomic_write("whole.pt") as tmp_path:
        torch.save(model.module, tmp_path)
""", "a_write_block_that_computes_what_follows_is_not_hidden_from_other_processes", also={"unwrap-model"}, scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # issue 27 (the twenty-fourth sweep's tda project, decision 0184: its CSVLogging callback): the header's
    # `with open(path, "w")` also sets `self.headers_written = True`, which the next epoch tests, so the whole
    # block ran on every process and each wrote the file. A store that reads nothing the block makes is
    # set after the block, on every process; the write runs on the main process only. Near miss above:
    # `vocab = sorted(...)` (a call) stays in the block, with its TODO.
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


class CSVLog:
    def __init__(self, path):
        self.path = path
        self.started = False

    def log(self, epoch, loss):
        if not self.started:
            with open(self.path, "w") as f:
                f.write("epoch,loss\\n")
                self.started = True
        with open(self.path, "a") as f:
            f.write(f"{epoch},{loss}\\n")


log = CSVLog("log.csv")
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    log.log(epoch, loss.item())
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import device_ids, is_main_process

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


class CSVLog:
    def __init__(self, path):
        self.path = path
        self.started = False

    def log(self, epoch, loss):
        if not self.started:
            if is_main_process():
                with open(self.path, "w") as f:
                    f.write("epoch,loss\\n")
            self.started = True
        if is_main_process():
            with open(self.path, "a") as f:
                f.write(f"{epoch},{loss}\\n")


log = CSVLog("log.csv")
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    log.log(epoch, loss.item())
""", "a_flag_set_in_a_write_block_from_nothing_the_block_makes_is_set_after_it", also={"wrap-model"},
         scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # A real script's shape (sweep): `def dump(...): with open(...) as f: ...` called per epoch.
    pair("""\
    dump([epoch], "log.txt")
def dump(values, name):
    with open(name, "w") as f:
        f.write(str(values))
""", """\
from ddpify_runtime import is_main_process

    if is_main_process():
        dump([epoch], "log.txt")
def dump(values, name):
    with open(name, "w") as f:
        f.write(str(values))
""", "a_helper_that_writes_inside_a_with_block_is_guarded_where_it_is_called", scaffold=SCRIPT.at_end),
    # A real script's shape (sweep, word_language_model): `with open(path, "wb") as f:
    # torch.save(model, f)` each epoch, loaded back through a handle after training.
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    with open("m.pt", "wb") as f:
        torch.save(model, f)
with open("m.pt", "rb") as f:
    model = torch.load(f)
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import barrier, device_ids, is_main_process

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    if is_main_process():
        with open("m.pt", "wb") as f:
            torch.save(model.module, f)
    barrier()
with open("m.pt", "rb") as f:
    model = torch.load(f)
""", "a_save_through_a_file_handle_that_is_read_back_is_followed_by_a_barrier", also={"unwrap-model"}, scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # a 'latest' checkpoint link replaced after each save (SLURM-ready trainers): pathlib's unlink and
    # symlink_to, os.symlink, on every process would race (one unlinks the link another just made)
    pair("""\
import os
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    try:
        if latest.exists():
            latest.unlink()
        latest.symlink_to(name)
    except OSError:
        pass
    os.symlink(name, last)
""", """\
from ddpify_runtime import is_main_process

import os
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    try:
        if latest.exists() and is_main_process():
            latest.unlink()
        if is_main_process():
            latest.symlink_to(name)
    except OSError:
        pass
    if is_main_process():
        os.symlink(name, last)
""", "links_replaced_through_pathlib_and_os_symlink_are_the_main_processs", scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # a checkpoint saved every k epochs or every so many seconds (SLURM-ready trainers) and read back
    # in the same `if`: the clock differs between processes, so the test is agreed and every
    # process waits at the barrier right after the save (after the `if` came too late for the read)
    pair("""\
import time
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
last = time.time()
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    now = time.time()
    if epoch % 5 == 0 or now - last >= 60:
        torch.save(model.state_dict(), "m.pt")
        model.load_state_dict(torch.load("m.pt"))
        last = now
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import agree_on, atomic_write, barrier, device_ids, is_main_process

model = DistributedDataParallel(model, device_ids=device_ids(model))
import time
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
last = time.time()
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    now = time.time()
    if agree_on(epoch % 5 == 0 or now - last >= 60):
        if is_main_process():
            with atomic_write("m.pt") as tmp_path:
                torch.save(model.module.state_dict(), tmp_path)
        barrier()
        model.module.load_state_dict(torch.load("m.pt"))
        last = now
""", "a_save_read_back_in_an_if_whose_test_reads_the_clock_agrees_the_test_and_waits_after_the_save", also={"unwrap-model"}, scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # pytorch-template's ConfigParser (traffic_gru, 14a; decision 0108): pathlib's mkdir, whose exist_ok is
    # False unless given, or a name set to a test (False for a run named by the time), raced by every
    # process: the slower one fails with FileExistsError; one that tolerates the folder stays everywhere, and so
    # does a `mkdir` method of the program's own (it may set what the other processes read)
    pair("""\
from pathlib import Path
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)



class Run:
    def mkdir(self):
        self.log_dir = "runs/log"


run_id = "0101_120000"
exist_ok = run_id == ''
save_dir = Path("saved") / run_id
save_dir.mkdir(parents=True, exist_ok=exist_ok)
(save_dir / "log").mkdir()
Path("cache").mkdir(parents=True, exist_ok=True)
Run().mkdir()
for x, y in train_loader:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
""", """\
from pathlib import Path
from ddpify_runtime import is_main_process

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)



class Run:
    def mkdir(self):
        self.log_dir = "runs/log"


run_id = "0101_120000"
exist_ok = run_id == ''
save_dir = Path("saved") / run_id
if is_main_process():
    save_dir.mkdir(parents=True, exist_ok=exist_ok)
    (save_dir / "log").mkdir()
Path("cache").mkdir(parents=True, exist_ok=True)
Run().mkdir()
for x, y in train_loader:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
""", "a_pathlib_mkdir_that_fails_on_an_existing_folder_runs_on_the_main_process_only",
         scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # ncsn's main.py: a run folder cleared then made again; on every process, one deletes the
    # folder (and the config in it) another has just made: the deletion is the main process's too
    pair("""\
import os
import shutil
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)

if os.path.exists("runs/exp"):
    shutil.rmtree("runs/exp")
os.makedirs("runs/exp")
with open("runs/exp/config.txt", "w") as f:
    f.write("lr=0.1")
for x, y in train_loader:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
os.replace("last.pt", "previous.pt")
""", """\
import os
import shutil
from ddpify_runtime import is_main_process

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)

if os.path.exists("runs/exp") and is_main_process():
    shutil.rmtree("runs/exp")
if is_main_process():
    os.makedirs("runs/exp")
    with open("runs/exp/config.txt", "w") as f:
        f.write("lr=0.1")
for x, y in train_loader:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
if is_main_process():
    os.replace("last.pt", "previous.pt")
""", "removing_and_renaming_files_runs_on_the_main_process_only", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # ncsn's main.py again, as it is: the clearing sits in an `if` whose body now only writes, so
    # the `if` runs on the main process only; a barrier in it would wait for the others forever
    pair("""\
import os
import shutil
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)


def prepare(log, resume):
    if not resume:
        if os.path.exists(log):
            shutil.rmtree(log)
        os.makedirs(log)
    with open(os.path.join(log, "config.txt"), "w") as f:
        f.write("lr=0.1")
    with open(os.path.join(log, "config.txt")) as f:
        print(f.read())


prepare("runs/exp", False)
for x, y in train_loader:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
""", """\
import os
import shutil
from ddpify_runtime import barrier, is_main_process

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)


def prepare(log, resume):
    if not resume and is_main_process():
        if os.path.exists(log):
            shutil.rmtree(log)
        os.makedirs(log)
    if is_main_process():
        with open(os.path.join(log, "config.txt"), "w") as f:
            f.write("lr=0.1")
    barrier()
    with open(os.path.join(log, "config.txt")) as f:
        print(f.read())


prepare("runs/exp", False)
for x, y in train_loader:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
""", "a_barrier_after_a_write_goes_after_the_if_the_main_process_alone_enters", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    # a write in a `try` whose handler lets the process go on (pytorch/examples dcgan's folder,
    # before decision 0252: a folder maker so caught is no race now): the main process may raise
    # and leave the `try`; a barrier inside it would wait for the main process forever.
    pair("""\
import os
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)

try:
    torch.save(model.state_dict(), "init.pt")
except OSError:
    pass
model.load_state_dict(torch.load("init.pt"))
for x, y in train_loader:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
""", """\
import os
from ddpify_runtime import atomic_write, barrier, is_main_process

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)

try:
    if is_main_process():
        with atomic_write("init.pt") as tmp_path:
            torch.save(model.state_dict(), tmp_path)
except OSError:
    pass
barrier()
model.load_state_dict(torch.load("init.pt"))
for x, y in train_loader:
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
""", "a_barrier_after_a_write_in_a_try_goes_after_the_whole_try", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    # checkpoint
    torch.save(model.state_dict(), "m.pt")
    with open("log.txt", "a") as f:
        f.write(f"{epoch}\\n")
""", """\
from ddpify_runtime import atomic_write, full_state_dict, is_main_process, shard_model

model = shard_model(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    # checkpoint
    model_state = full_state_dict(model)
    if is_main_process():
        with atomic_write("m.pt") as tmp_path:
            torch.save(model_state, tmp_path)
        with open("log.txt", "a") as f:
            f.write(f"{epoch}\\n")
""", "fsdp_gathers_run_on_every_process_before_one_guarded_block_of_writes", also={"unwrap-model"}, strategy="fsdp", scaffold=TRAINS.instead_of("opt", "loop")),
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
if save:
    torch.save(model.state_dict(), 'm.pt')
""", """\
from ddpify_runtime import atomic_write, full_state_dict, is_main_process, shard_model

model = shard_model(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
if save:
    model_state = full_state_dict(model)
    if is_main_process():
        with atomic_write('m.pt') as tmp_path:
            torch.save(model_state, tmp_path)
""", "fsdp_an_if_that_only_saves_keeps_its_condition_and_guards_the_write_inside", also={"unwrap-model"}, strategy="fsdp", scaffold=TRAINS.instead_of("opt", "loop")),
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
model_output = 1
torch.save(model(x), 'sample.pt')
""", """\
from ddpify_runtime import atomic_write, is_main_process, shard_model

model = shard_model(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
model_output = 1
model_output_2 = model(x)
if is_main_process():
    with atomic_write('sample.pt') as tmp_path:
        torch.save(model_output_2, tmp_path)
""", "fsdp_a_forward_inside_a_write_runs_everywhere_and_names_do_not_clash", also={"unwrap-model"}, strategy="fsdp", scaffold=TRAINS.instead_of("opt", "loop")),
    pair("""\
def save_checkpoint(model, path):
    torch.save(model.state_dict(), path)


loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
save_checkpoint(model, 'm.pt')
""", """\
from ddpify_runtime import atomic_write, full_state_dict, is_main_process, shard_model

def save_checkpoint(model, path):
    model_state = full_state_dict(model)
    if is_main_process():
        with atomic_write(path) as tmp_path:
            torch.save(model_state, tmp_path)


loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
model = shard_model(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
save_checkpoint(model, 'm.pt')
""", "fsdp_a_helper_that_gathers_is_guarded_inside_not_where_it_is_called", also={"unwrap-model"}, strategy="fsdp", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    pair("""\
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
with open('w.txt', 'w') as f:
    f.write(str(model(torch.ones(len(f.name), 2))))
""", """\
from ddpify_runtime import is_main_process, shard_model

model = shard_model(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
# TODO(ddpify): `model(torch.ones(len(f.name), 2))` is a collective under FSDP2 (every process must run it), but it reads a name this write binds: compute it before the write, on every process
if is_main_process():
    with open('w.txt', 'w') as f:
        f.write(str(model(torch.ones(len(f.name), 2))))
""", "fsdp_a_gather_that_reads_what_the_write_binds_gets_a_todo", also={"unwrap-model"}, strategy="fsdp", scaffold=TRAINS.instead_of("opt", "loop")),
    # any write read back later is followed by a barrier: one after the pickle, one after the two
    # writes in a row (the epoch's end_epoch() comes from set-epoch)
    pair("""\
import json
import pickle
import numpy as np

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

with open("vocab.pkl", "wb") as f:
    pickle.dump(vocab, f)
with open("vocab.pkl", "rb") as f:
    vocab = pickle.load(f)
np.save("w.npy", w)
json.dump(w, open("w.json", "w"))
print(np.load("w.npy"), json.load(open("w.json")))
""", """\
from ddpify_runtime import barrier, end_epoch, is_main_process, set_epoch

import json
import pickle
import numpy as np

for epoch in range(3):
    set_epoch(train_loader, epoch)
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    end_epoch()

if is_main_process():
    with open("vocab.pkl", "wb") as f:
        pickle.dump(vocab, f)
barrier()
with open("vocab.pkl", "rb") as f:
    vocab = pickle.load(f)
if is_main_process():
    np.save("w.npy", w)
    json.dump(w, open("w.json", "w"))
barrier()
print(np.load("w.npy"), json.load(open("w.json")))
""", "any_write_read_back_later_is_followed_by_a_barrier", also={"set-epoch"}, scaffold=SCRIPT.instead_of("loop")),
    # a barrier after a write goes where every process passes: after the `if` (a test that differs
    # between processes), besides the epoch's
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

best = 1e9
for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    if loss.item() < best:
        best = loss.item()
        torch.save(model, "best.pt")
    print(epoch)
model = torch.load("best.pt", weights_only=False)
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import atomic_write, barrier, device_ids, end_epoch, is_main_process, set_epoch

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

best = 1e9
for epoch in range(3):
    set_epoch(train_loader, epoch)
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
    if loss.item() < best:
        best = loss.item()
        if is_main_process():
            with atomic_write("best.pt") as tmp_path:
                torch.save(model.module, tmp_path)
    barrier()
    print(epoch)
    end_epoch()
model = torch.load("best.pt", weights_only=False)
""", "a_barrier_after_a_write_goes_where_every_process_passes", also={"set-epoch", "unwrap-model"}, scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # a write read back by another function (save() then restore()) is followed by a barrier
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

def save():
    out = model(torch.ones(1, 2))
    torch.save(model, "net.pkl")

def restore():
    return torch.load("net.pkl", weights_only=False)

save()
restored = restore()
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import atomic_write, barrier, device_ids, is_main_process

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

def save():
    out = model(torch.ones(1, 2))
    if is_main_process():
        with atomic_write("net.pkl") as tmp_path:
            torch.save(model.module, tmp_path)
    barrier()

def restore():
    return torch.load("net.pkl", weights_only=False)

save()
restored = restore()
""", "a_write_read_back_by_another_function_is_followed_by_a_barrier", also={"unwrap-model"}, scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # ... but not when some processes may skip the call of the writing function
    pair("""\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

def save():
    out = model(torch.ones(1, 2))
    torch.save(model, "net.pkl")

def restore():
    return torch.load("net.pkl", weights_only=False)

if loss_fn(model(x), y) > 1:
    save()
restored = restore()
""", """\
from torch.nn.parallel import DistributedDataParallel
from ddpify_runtime import atomic_write, device_ids, is_main_process

model = DistributedDataParallel(model, device_ids=device_ids(model))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

def save():
    out = model(torch.ones(1, 2))
    if is_main_process():
        with atomic_write("net.pkl") as tmp_path:
            torch.save(model.module, tmp_path)

def restore():
    return torch.load("net.pkl", weights_only=False)

if loss_fn(model(x), y) > 1:
    save()
restored = restore()
""", "a_write_under_a_condition_read_back_by_another_function_is_followed_by_a_barrier", also={"unwrap-model"}, scaffold=SCRIPT.instead_of("optimizer", "loop")),
    # a helper that only writes is guarded, and followed by a barrier, where it is called
    pair("""\

def save():
    torch.save(model, "net.pkl")

def restore():
    return torch.load("net.pkl", weights_only=False)

save()
restored = restore()
""", """\
from ddpify_runtime import atomic_write, barrier, is_main_process


def save():
    with atomic_write("net.pkl") as tmp_path:
        torch.save(model, tmp_path)

def restore():
    return torch.load("net.pkl", weights_only=False)

if is_main_process():
    save()
barrier()
restored = restore()
""", "a_helper_that_only_writes_is_followed_by_a_barrier_where_it_is_called", scaffold=SCRIPT.at_end),
    # a helper that only writes: guarded where it is called, its save atomic inside; a save into
    # an in-memory buffer is not a file to replace (guarded, not atomic)
    pair("""\
def save(m, path):
    torch.save(m, path)


loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
save(model, 'm.pt')
""", """\
from ddpify_runtime import atomic_write, is_main_process

def save(m, path):
    with atomic_write(path) as tmp_path:
        torch.save(m, tmp_path)


loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
if is_main_process():
    save(model, 'm.pt')
""", "a_helper_that_only_writes_is_guarded_where_it_is_called_and_its_save_is_atomic", scaffold=TRAINS.instead_of("loader", "model", "opt", "loop")),
    pair("""\
import io
from pathlib import Path
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
Path("m.pt").write_bytes(buffer.getvalue())
""", """\
from ddpify_runtime import is_main_process

import io
from pathlib import Path
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
if is_main_process():
    Path("m.pt").write_bytes(buffer.getvalue())
""", "an_in_memory_buffer_written_to_a_file_later_is_guarded_where_it_is_written", scaffold=TRAINS.at_end),
]

UNCHANGED = [
    # a data set's own files, written when it is built and read back: download-first builds it on the
    # first process before the others, so the write stays (guarded with a barrier inside a branch that
    # asks whether the file exists, a late process finding the file skips the barrier and hangs)
    pytest.param("""\
import io
import json
import os
import torch
from torch.utils.data import DataLoader, Dataset
class Prepared(Dataset):
    def __init__(self, root, split):
        self.path = os.path.join(root, split + '.json')
        if not os.path.exists(self.path):
            self._create()
        else:
            self._load()
    def _create(self):
        rows = [[float(i), float(2 * i)] for i in range(8)]
        with open(self.path, 'w') as f:
            json.dump(rows, f)
        self._load()
    def _load(self):
        with open(self.path) as f:
            self.rows = json.load(f)
    def __len__(self):
        return len(self.rows)
    def __getitem__(self, i):
        return torch.tensor(self.rows[i][:1]), torch.tensor(self.rows[i][1:])
loader = DataLoader(Prepared('data', 'train'), batch_size=4, shuffle=True)
model = torch.nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
""", id="a_data_sets_own_files_written_when_it_is_built"),
    # the runtime silences print
    unchanged("""\
    print(f"epoch {epoch}")
""", "the_runtime_silences_print", TRAINS.at_end),
    # a save after an early return on a rank test runs on the main process already; guarded again,
    # the barrier after it was one the returned processes never reach (a hang)
    unchanged("""\
import os


def save(m):
    if int(os.environ.get("RANK", 0)) != 0:
        return
    torch.save(m.state_dict(), "m.pt")


save(model)
model.load_state_dict(torch.load("m.pt"))
""", "a_save_after_an_early_return_on_a_rank_test", TRAINS.at_end),
    # a save into an in-memory buffer writes no file, on any process (decision 0017)
    unchanged("""\
import io
buffer = io.BytesIO()
torch.save(model, buffer)
size = buffer.tell()
""", "a_save_into_an_in_memory_buffer", TRAINS.at_end),
    # reading
    unchanged("""\
    with open("log.txt") as f:
        print(f.read())
""", "reading", TRAINS.at_end),
]

test_pairs, test_unchanged = rewrite_tests(NAME, PAIRS, UNCHANGED)


# --- --strategy fsdp: gathers and forwards are collectives, run before the guard -----------------

FSDP_ALSO = frozenset({"wrap-model", "unwrap-model"})


def _fsdp(code: str) -> str:
    from tests.support.snippets import only

    return only(NAME, code, FSDP_ALSO, strategy="fsdp")


# --- objects that exist on the main process only (issue 27, class 10) ---------------------------

TRAINER_WITH_WRITER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)
        self.writer = SummaryWriter()

    def fit(self):
        for x, y in self.loader:
            self.opt.zero_grad()
            loss = ((self.model(x) - y) ** 2).mean()
            loss.backward()
            self.opt.step()
            self.writer.add_scalar("loss", loss.item())
        run_dir = self.writer.log_dir
        print(run_dir)


Trainer().fit()
"""


def test_a_constructor_that_builds_a_writer_runs_on_every_process():
    """`__init__` builds the writer, the model and the loader: it is not a helper that only writes
    (`Trainer().fit()` was guarded whole, so that the main process trained alone)."""
    out = only(NAME, TRAINER_WITH_WRITER)
    assert "\nTrainer().fit()" in out
    assert "self.writer = SummaryWriter() if is_main_process() else None" in out


def test_a_writer_made_by_an_annotated_assignment_exists_on_the_main_process_only():
    """`self.metrics_writer: SummaryWriter = SummaryWriter(path)` (a trainer base class's `__init__`):
    the annotated assignment made the writer, and its log folder, on every process, silently, while
    its calls were guarded as a logger's."""
    out = only(NAME, TRAINER_WITH_WRITER.replace("self.writer = SummaryWriter()", "self.writer: SummaryWriter = SummaryWriter()"))
    assert "self.writer: SummaryWriter = SummaryWriter() if is_main_process() else None" in out


def test_a_disabled_bar_draws_nothing_it_lacks():
    """pettod/pytorch-template (ninth fresh sweep): `progress_bar = trange(n, leave=False)`, then
    `progress_bar.display(text, 1)`: the bar disabled off the main process has no `nrows`, and
    `display` raised AttributeError there, silently; the call is made on the main process only,
    `set_description` (which a disabled bar takes) stays as it is."""
    out = only(NAME, SCRIPT.instead_of("loop").around("""\
from tqdm import trange

for epoch in range(2):
    progress_bar = trange(2, leave=False)
    progress_bar.set_description("epoch")
    for i, (x, y) in zip(progress_bar, train_loader):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        progress_bar.display("loss", 1)
"""))
    assert "    progress_bar.set_description(\"epoch\")\n" in out
    assert "        if is_main_process():\n            progress_bar.display(\"loss\", 1)\n" in out


def test_a_read_of_a_main_process_only_writer_is_the_main_process_value():
    """`self.writer.log_dir` on every process raised AttributeError off the main process, silently
    converted; its method calls are guarded, and its attribute reads take the main process's value
    (a broadcast), whole chains included; a read some processes may skip runs on the main process
    only (None elsewhere), with a warning."""
    out = only(NAME, TRAINER_WITH_WRITER.replace("print(run_dir)", "print(run_dir, str(self.writer.file_writer.get_logdir()))"))
    assert "        run_dir = from_main_process(lambda: self.writer.log_dir)\n" in out
    assert "print(run_dir, str(from_main_process(lambda: self.writer.file_writer.get_logdir())))" in out
    assert "        if is_main_process():\n                self.writer.add_scalar" in out
    assert "from_main_process" not in only(NAME, TRAINER_WITH_WRITER.replace("run_dir = self.writer.log_dir", "run_dir = 'runs'"))
    skipped = rewritten(NAME, TRAINER_WITH_WRITER.replace("        run_dir = self.writer.log_dir",
                                                          "        if loss.item() > 1:\n            run_dir = self.writer.log_dir"))
    assert "run_dir = self.writer.log_dir if is_main_process() else None" in skipped.code and "lambda" not in skipped.code
    assert any("`self.writer.log_dir` is the main process's value there and None" in w for w in warnings(skipped.changes))


PROGRAM_LOGGER_READ = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter


class Logger:
    def __init__(self, path):
        self.writer = SummaryWriter(path)
        self.best = None

    def write(self, split):
        return f"{split}: {self.best}"

    def compare(self, split):
        return True

    def state_dict(self):
        return {"best": self.best}


def train(loader, model, optimizer, logger):
    for i, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
        if i % 2 == 0:
            print(logger.write("train"))


model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=2, shuffle=True)
logger = Logger("runs")
for step in range(4):
    train(loader, model, optimizer, logger)
    if torch.rand(1).item() > 0.5:
        result = {"model": model.state_dict(), "logger": logger.state_dict()}
        if logger.compare("test"):
            torch.save(result, "best.pt")
"""


def test_what_a_main_process_only_logger_returns_is_read_where_it_exists():
    """RPipe's train_model.py (twelfth sweep): its Logger (a class of the program making a
    SummaryWriter) is None off the main process, but `print(logger.write('train'))`,
    `{'logger': logger.state_dict()}` and `if logger.compare('test'): save` read it on every
    process, and the second process died of AttributeError. Now the print is guarded (printed on the
    main process only anyway), the dict's read runs on the main process only (None elsewhere:
    some processes may not reach the line, a broadcast could wait forever), and the `if` tests the
    guard first."""
    out = rewritten(NAME, PROGRAM_LOGGER_READ)
    assert "        if i % 2 == 0 and is_main_process():\n            print(logger.write(\"train\"))\n" in out.code \
        or "        if i % 2 == 0:\n            if is_main_process():\n                print(logger.write(\"train\"))\n" in out.code
    assert '"logger": logger.state_dict() if is_main_process() else None}' in out.code
    assert '        if is_main_process() and logger.compare("test"):\n' in out.code


LOGGER_CLASS = """\
import tensorflow as tf
import torch
from torch.utils.data import DataLoader, TensorDataset


class Logger:
    def __init__(self, log_dir):
        self.writer = tf.summary.create_file_writer(log_dir)

    def scalar_summary(self, tag, value, step):
        with self.writer.as_default():
            tf.summary.scalar(tag, data=value, step=step)


class Solver:
    def __init__(self):
        self.net = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.logger = Logger("./logs")
        self.logger.writer.flush()

    def train(self, loader):
        self.file = open("scores.txt", "w")
        for i, (x, y) in enumerate(loader):
            self.opt.zero_grad()
            loss = (self.net(x) - y).pow(2).mean()
            loss.backward()
            self.opt.step()
            self.logger.scalar_summary("loss", loss.item(), i)
            self.file.write(f"{loss.item()}\\n")
        self.file.close()


Solver().train(DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4))
"""


def test_a_logger_class_of_the_program_and_a_file_written_line_by_line_are_loggers():
    """`Logger(log_dir)`, whose `__init__` makes TensorFlow's summary writer, and `self.file =
    open(p, "w")` only written and closed, wrote on every process (the held-out sweep's wgan_gp and
    wgan_dcgan): each is made on the main process only, and what uses it is guarded."""
    out = only(NAME, LOGGER_CLASS)
    assert 'self.logger = Logger("./logs") if is_main_process() else None' in out
    assert "        if is_main_process():\n            self.logger.writer.flush()" in out
    assert 'self.file = open("scores.txt", "w") if is_main_process() else None' in out
    assert "            if is_main_process():\n                self.logger.scalar_summary" in out
    assert "        if is_main_process():\n            self.file.close()" in out
    assert "self.writer = tf.summary.create_file_writer(log_dir)\n" in out  # guarded where Logger() is called
    handed = only(NAME, LOGGER_CLASS.replace('        self.file = open("scores.txt", "w")',
                                             '        self.file = open("scores.txt", "w")\n        rows = csv.writer(self.file)'))
    assert 'self.file = open_on_main("scores.txt", "w")\n' in handed  # csv.writer(None) would fail: os.devnull
    trainer = only(NAME, LOGGER_CLASS.replace("class Logger:", "class Logger:\n    net = None").replace(
        "        self.writer = tf", "        self.net = torch.nn.Linear(2, 1)\n        self.writer = tf"))
    assert 'self.logger = Logger("./logs")\n' in trainer  # it holds a model: not a logger


AGENTS_IN_A_LIST = """\
import torch


class Agent:
    def __init__(self):
        self.net = torch.nn.Linear(2, 1)

    def save(self, name):
        torch.save(self.net.state_dict(), name + "_net.pth")


class Team:
    def __init__(self, levels):
        self.agents = [Agent()]
        for _ in range(levels - 1):
            self.agents.append(Agent())

    def save(self, name):
        for i in range(len(self.agents)):
            self.agents[i].save(name + str(i))


team = Team(2)
opt = torch.optim.SGD(team.agents[0].net.parameters(), lr=0.1)
team.agents[0].net(torch.randn(4, 2)).sum().backward()
opt.step()
team.save("team")
"""


def test_a_helper_that_only_writes_reached_through_an_item_of_a_list_is_guarded_where_it_is_called():
    """`self.agents[i].save(...)` (hierarchical actor-critic: an object holding a list of agents,
    each saving its networks) ran the save on every process, silently: the item of a list was of
    no known class. Now its class is the one every item given to the list is an instance of (the
    list written out or a comprehension, `append`, `insert`); a list also given items it cannot
    tell (`extend`) names none."""
    out = only(NAME, AGENTS_IN_A_LIST)
    assert "            if is_main_process():\n                self.agents[i].save(name + str(i))\n" in out
    comprehension = only(NAME, AGENTS_IN_A_LIST.replace("[Agent()]", "[Agent() for _ in range(levels)]"))
    assert "            if is_main_process():\n                self.agents[i].save(" in comprehension
    appended = only(NAME, AGENTS_IN_A_LIST.replace("[Agent()]", "[]"))
    assert "            if is_main_process():\n                self.agents[i].save(" in appended
    extended = only(NAME, AGENTS_IN_A_LIST.replace("self.agents.append(Agent())", "self.agents.extend(more)"))
    assert "is_main_process():\n                self.agents[i].save(" not in extended


def test_a_helper_that_only_writes_called_on_a_loop_variable_over_a_list_is_guarded_where_it_is_called():
    """`for agent in self.agents: agent.save(...)` (or `for i, agent in enumerate(self.agents)`)
    ran the save on every process, silently, as `self.agents[i].save(...)` did: the loop variable
    takes the classes of the list's items."""
    indexed = "        for i in range(len(self.agents)):\n            self.agents[i].save(name + str(i))\n"
    for loop in ("for agent in self.agents:", "for i, agent in enumerate(self.agents):"):
        out = only(NAME, AGENTS_IN_A_LIST.replace(indexed, f"        {loop}\n            agent.save(name)\n"))
        assert f"        {loop}\n            if is_main_process():\n                agent.save(name)\n" in out


def test_a_helper_that_only_writes_reached_through_a_dict_of_the_programs_instances_is_guarded_where_it_is_called():
    """`self.agents = {"low": Agent()}`, then `self.agents[key].save(...)` or a loop over its
    `.values()` or `.items()`: the save ran on every process, silently; a dict also given items
    by `update` names no class."""
    indexed = "        for i in range(len(self.agents)):\n            self.agents[i].save(name + str(i))\n"
    as_dict = AGENTS_IN_A_LIST.replace("[Agent()]", '{"low": Agent()}').replace(
        "self.agents.append(Agent())", 'self.agents["high"] = Agent()').replace("team.agents[0]", 'team.agents["low"]')
    for loop, call in (("for key in self.agents:", "self.agents[key].save(name + key)"),
                       ("for agent in self.agents.values():", "agent.save(name)"),
                       ("for key, agent in self.agents.items():", "agent.save(name + key)")):
        out = only(NAME, as_dict.replace(indexed, f"        {loop}\n            {call}\n"))
        assert f"        {loop}\n            if is_main_process():\n                {call}\n" in out
    updated = only(NAME, as_dict.replace('self.agents["high"] = Agent()', "self.agents.update(more)").replace(
        indexed, "        for agent in self.agents.values():\n            agent.save(name)\n"))
    assert "is_main_process():\n                agent.save(name)" not in updated


def test_a_helper_returning_what_an_image_writer_returns_guards_that_return():
    """`return scipy.misc.imsave(path, image)` ending a helper was written by every process (the
    fresh sweep's GAN collection: utils.imsave); a return before the end is not guarded."""
    code = """\
import numpy as np
import scipy.misc
import torch


def imsave(images, path):
    image = np.squeeze(images)
    return scipy.misc.imsave(path, image)


def first(images, path):
    return scipy.misc.imsave(path, images)
    print(path)


model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(4, 2)).sum().backward()
opt.step()
imsave(np.zeros((2, 2)), "w.png")
"""
    out = only(NAME, code)
    assert "    if is_main_process():\n        return scipy.misc.imsave(path, image)\n\n" in out
    assert "def first(images, path):\n    return scipy.misc.imsave(path, images)\n" in out
    # read back later: still no barrier after the return the main process leaves by (it hung there)
    assert "barrier" not in only(NAME, code + "def restore():\n    return open('w.png', 'rb').read()\nrestore()\n")


def test_saves_that_every_process_reaches_at_one_point_get_one_barrier_there():
    """Two writes of a `__main__` block, a load after them: a barrier after the block for each, one
    after another (fresh sweep 2's WassersteinGAN: generator_config.json written twice)."""
    code = """\
import json
import torch

if __name__ == '__main__':
    model = torch.nn.Linear(2, 1)
    with open('config.json', 'w') as f:
        f.write(json.dumps({'a': 1}))
    with open('config.json', 'w') as f:
        f.write(json.dumps({'a': 2}))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.load_state_dict(torch.load('m.pt'))
    print(json.load(open('config.json')))
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
"""
    assert only(NAME, code).count("barrier()\n") == 1
    # (read back by a text read: `torch.load('m.pt')` alone reads no text file, and waits for none)


LOG_HELPER = """\
import os
import torch


def logging(s):
    print(s)
    with open(os.path.join("save", "log.txt"), "a+") as f_log:
        f_log.write(s + "\\n")


logging("start")
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.randn(3, 2)).sum().backward()
opt.step()
{read}
"""


@pytest.mark.parametrize("read, barriers", [
    ('state = torch.load("cache.pt")', 0),  # a checkpoint read: no text file the log could be
    ('with open("cache.pt", "rb") as f:\n    state = f.read()', 0),  # a binary read
    ('print(open(os.path.join("save", "log.txt")).read())', 1),  # near miss: a text read, which may be the log
])
def test_a_text_file_written_line_by_line_waits_only_for_a_text_read(read, barriers):
    """AWD-LSTM's `logging(s)` (the seventeenth sweep's tuning half) appends a line to save/log.txt;
    ten calls at its module level each got a barrier after them, a checkpoint being read later
    (`torch.load`): a text file written line by line is never what a binary reader reads."""
    assert only(NAME, LOG_HELPER.format(read=read)).count("barrier()\n") == barriers


CORPUS = """\
class Corpus:
    def __init__(self, path):
        self.train = self.tokenize(os.path.join(path, {train}))
        self.valid = self.tokenize(os.path.join(path, "valid.txt"))

    def tokenize(self, path):
        with open(path) as f:
            return f.read().split()


corpus = Corpus("data")"""


@pytest.mark.parametrize("train, barriers", [
    ('"train.txt"', 0),  # the corpus's files: other names than the log's, whatever the folders
    ('"LOG.txt"', 1),  # near miss: the log's name (on a case-blind disk)
    ("args.split", 1),  # near miss: a name ddpify cannot tell
])
def test_a_write_and_a_later_read_of_files_of_other_names_need_no_barrier(train, barriers):
    """AWD-LSTM's `logging(s)` appends to `os.path.join(CKPT_DIR, 'log.txt')`, and its module then
    reads the corpus, `open(path)` in `Corpus.tokenize` given `os.path.join(path, 'train.txt')`:
    each log line before the corpus kept a barrier after 407336a0 (a text log waits for text reads
    only), and the `if os.path.exists(...)` around two of them was agreed (decision 0134: 7 barriers
    -> 3). Files whose paths end in other names are other files (`writes.other_files`)."""
    out = only(NAME, LOG_HELPER.format(read=CORPUS.format(train=train)))
    assert out.count("barrier()\n") == barriers


FILE_HANDED_DOWN = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(net, opt, loader, trainF):
    for x, y in loader:
        opt.zero_grad()
        loss = (net(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
        trainF.write(f"{loss.item()}\\n")
        trainF.flush()


def main():
    net = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    trainF = open("train.csv", "w")
    for epoch in range(2):
        train(net, opt, loader, trainF)
    trainF.close()


main()
"""


def test_a_file_opened_for_writing_and_handed_to_a_function_that_only_writes_it_is_a_logger():
    """`trainF = open(p, 'w')` in main(), passed to train() which only writes and flushes it
    (bamos/densenet.pytorch's train.csv): every process wrote it. It is opened on the main process
    only and its writes in train() are guarded; a callee that reads it otherwise keeps a handle
    everywhere, the file on the main process only (`open_on_main`: os.devnull elsewhere)."""
    out = only(NAME, FILE_HANDED_DOWN)
    assert "trainF = open(\"train.csv\", \"w\") if is_main_process() else None" in out
    assert "        if is_main_process():\n            trainF.write(" in out
    near = only(NAME, FILE_HANDED_DOWN.replace("        trainF.flush()", "        print(trainF.name)"))
    assert "trainF = open_on_main(\"train.csv\", \"w\")\n" in near


def test_a_file_handed_to_a_function_that_tests_it_against_none_before_writing_is_a_logger():
    """LDAM-DRW's `validate(..., log)` writes `log_test.csv` under `if log is not None:`: every
    process opened and wrote it (the runtime's shared-write). Such a test passes on the main process
    and fails where the file is None; a test of another value keeps a handle everywhere (`open_on_main`)."""
    tested = FILE_HANDED_DOWN.replace("        trainF.write(", "        if trainF is not None:\n            trainF.write(")
    out = only(NAME, tested)
    assert "trainF = open(\"train.csv\", \"w\") if is_main_process() else None" in out
    near = only(NAME, tested.replace("if trainF is not None:", "if trainF is not sys.stdout:"))
    assert "trainF = open_on_main(\"train.csv\", \"w\")\n" in near


TEE = """\
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset


class Tee:
    def __init__(self, fname, mode="a"):
        self.stdout = sys.stdout
        self.file = open(fname, mode)

    def write(self, message):
        self.stdout.write(message)
        self.file.write(message)
        self.flush()

    def flush(self):
        self.stdout.flush()
        self.file.flush()


sys.stdout = Tee("out.txt")
net = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
for x, y in loader:
    opt.zero_grad()
    (net(x) - y).pow(2).mean().backward()
    opt.step()
"""


def test_a_file_opened_with_a_mode_parameter_whose_default_writes_is_a_logger():
    """DomainBed's `sys.stdout = misc.Tee(os.path.join(out, 'out.txt'))`: `Tee.__init__(self,
    fname, mode="a")` opens `open(fname, mode)`, and every process wrote out.txt (the held-out run
    of decision 0048). A mode parameter whose default writes, which no call changes, writes; a
    call that passes its own mode keeps the file everywhere."""
    out = only(NAME, TEE)
    assert "self.file = open(fname, mode) if is_main_process() else None" in out
    near = only(NAME, TEE.replace('Tee("out.txt")', 'Tee("out.txt", args_mode)'))
    assert "self.file = open(fname, mode)\n" in near


SAVED_IN_MAIN = """\
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return torch.tensor(list(Image.open(self.paths[i]).getdata()), dtype=torch.float32)


def evaluate(model):
    return torch.load("model.pt")


def main():
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Images(["a.png", "b.png"]), batch_size=1, shuffle=True)
    for epoch in range(2):
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        torch.save(model.state_dict(), "model.pt")


main()
"""


@pytest.mark.parametrize("after_main, barrier", [
    ("", False),  # a data set's `Image.open` and an uncalled function read other files, or never
    ("evaluate(None)\n", True),  # read back after the function that saves
])
def test_a_save_is_followed_by_a_barrier_only_where_a_read_after_it_may_read_the_file(after_main, barrier):
    """radam_resnet (seventh sweep) and lidc_unet (eleventh): a save in `main()`, called once by every
    process, got `barrier()` after it because some other function of the program reads a file (a data
    set's `Image.open` in `__getitem__`, a CSV reader): nothing waits for the saved file there. A read in
    another function counts where it runs after a call of the saving function (or before it in a loop
    around both: the next round reads it)."""
    out = only(NAME, SAVED_IN_MAIN + after_main)
    assert ("barrier()" in out) is barrier


@pytest.mark.parametrize("order, barrier", [
    ("    save()\n    restore()\n", True),
    ("    restore()\n    save()\n", True),  # the next round reads what this one saved
    ("    restore()\nsave()\n", False),  # read before the save, never after it
])
def test_a_read_in_another_function_before_the_save_in_a_loop_is_a_read_back(order, barrier):
    """A save in a function that does more than write (`save()` takes a backward step, then saves: not a helper that only writes), called in a loop
    whose rounds read the file through `restore()`: below the call, or above it (the next round)."""
    code = SAVED_IN_MAIN.replace("        torch.save(model.state_dict(), \"model.pt\")\n", "") \
        .replace("def evaluate(model):\n    return torch.load(\"model.pt\")\n",
                 "def restore():\n    return torch.load(\"model.pt\")\n\n\ndef save():\n    MODEL(torch.ones(1, 4)).sum().backward()\n"
                 "    torch.save(MODEL.state_dict(), \"model.pt\")\n") \
        .replace("main()\n", "MODEL = torch.nn.Linear(4, 1)\nfor round in range(2):\n" + order)
    out = only(NAME, code)
    assert ("barrier()" in out) is barrier, out


STAR_TEE = """\
import os
import sys
import torch


class Tee:
    def __init__(self, *args, **kwargs):
        self.file = open(*args, **kwargs)
        self.stdout = sys.stdout
        sys.stdout = self

    def write(self, data):
        self.stdout.write(data)
        self.file.write(data)
        self.last = self.file.tell()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        sys.stdout = self.stdout
        self.file.close()


net = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
with Tee("train.log", "w", 1, encoding="utf-8"):
    for x in torch.randn(3, 4, 2):
        opt.zero_grad()
        net(x).sum().backward()
        opt.step()
        print(x.sum())
"""


@pytest.mark.parametrize("opened, kept", [
    ("open(*args, **kwargs)", False),  # the mode comes in the starred arguments
    ("open(args[0], *args[1:])", False),
    ('open("train.log", "w")', False),  # a handle also read (`tell()`): neither a guard nor None elsewhere
    ("open(args[0], 'r', *args[2:])", True),  # reads
    ("open(*args, mode='r')", True),
    ("open(args[0])", True),
    ('open(f"{args[0]}-{os.getpid()}", "w")', True),  # each process's own file
])
def test_a_kept_handle_opened_for_writing_opens_the_file_on_the_main_process_only(opened, kept):
    """The eleventh sweep's esc50_crossval: a stdout `Tee` opens its log with `open(*args, **kwargs)`
    in `__init__`, points `sys.stdout` at itself, seeks and tells, and is used as `with Tee(path,
    "w", 1, ...)`: every process truncated and wrote train.log (the self-check's shared-write), and
    the report said nothing. A handle opened to write (or with a mode the call leaves to its starred
    arguments) that is kept for more than writes is opened on every process, the file on the main
    process only: `open_on_main`, os.devnull elsewhere where the mode writes."""
    code = STAR_TEE.replace("open(*args, **kwargs)", opened)
    out = only(NAME, code)
    if kept:
        assert out == code
    else:
        assert f"self.file = {opened.replace('open(', 'open_on_main(', 1)}\n" in out
        assert "from ddpify_runtime import open_on_main\n" in out
        assert out.replace("from ddpify_runtime import open_on_main\n", "").replace("open_on_main(", "open(") == code


def test_a_file_opened_for_writing_that_print_writes_into_is_a_logger():
    """`log_output = open(p, 'w')` then `print(s, file=log_output)` (AlexiaJM/RelativisticGAN's
    log.txt): every process wrote it. It is opened on the main process only and each print into it
    is guarded (print(s, file=None) would write on stdout), with no barrier after it; a print to
    stdout stays, and a file also read keeps a handle on every process (`open_on_main`)."""
    code = FILE_HANDED_DOWN.replace("        trainF.write(f\"{loss.item()}\\n\")\n        trainF.flush()\n",
                                    "        print(loss.item(), file=trainF)\n        print(loss.item())\n")
    out = only(NAME, code)
    assert "trainF = open(\"train.csv\", \"w\") if is_main_process() else None" in out
    assert "        if is_main_process():\n            print(loss.item(), file=trainF)\n        print(loss.item())\n" in out
    assert "barrier()" not in out.split("def main")[0]
    near = only(NAME, code.replace("        print(loss.item())\n", "        print(loss.item(), trainF.name)\n"))
    assert "trainF = open_on_main(\"train.csv\", \"w\")\n" in near


PROBED_FOLDER = """\
import os
import torch

run = 0
base_dir = f"out/run-{run}"
while os.path.exists(base_dir):
    run += 1
    base_dir = f"out/run-{run}"
os.mkdir(base_dir)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
torch.save(model.state_dict(), os.path.join(base_dir, "m.pt"))
"""


def test_a_folder_named_by_probing_for_a_free_name_is_made_after_every_process_probed():
    """`while os.path.exists(base_dir): run += 1 ...` then `os.mkdir(base_dir)`
    (AlexiaJM/RelativisticGAN's run-N folders): with the mkdir on the main process only, a process
    that probed after it picked run-1, which nobody made, and crashed. Every process probes, then a
    barrier, then the main process makes the folder; a folder of a fixed name needs no barrier before."""
    out = only(NAME, PROBED_FOLDER)
    assert "    base_dir = f\"out/run-{run}\"\nbarrier()\nif is_main_process():\n    os.mkdir(base_dir)\n" in out
    fixed = only(NAME, PROBED_FOLDER.replace("os.mkdir(base_dir)", "os.mkdir('out/fixed')"))
    assert "barrier()\nif is_main_process():\n    os.mkdir" not in fixed


PROBE_DECIDES = """\
import os
import torch


def set_logging_defaults(logdir):
    if os.path.isdir(logdir):
        res = input("overwrite?")
    else:
        os.makedirs(logdir)
    return os.path.join(logdir, "log.txt")


log_path = set_logging_defaults("results/run")
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
torch.save(model.state_dict(), log_path + ".pt")
"""


def test_a_folder_made_in_a_branch_of_asking_whether_it_exists_is_made_after_every_process_asked():
    """alinlab/cs-kd's `set_logging_defaults`: `if os.path.isdir(logdir): input(...)` / `else:
    os.makedirs(logdir)`, the makedirs on the main process only: a process that asked after the
    main process made the folder took the other branch (EOFError at input() under torchrun, by
    timing). Every process asks, then a barrier in the branch that makes it; near misses: no other
    branch (`if not os.path.exists(d): os.makedirs(d)`, made by every process with exist_ok=True),
    and a branch asking about another folder."""
    out = only(NAME, PROBE_DECIDES)
    assert "    else:\n        barrier()\n        if is_main_process():\n            os.makedirs(logdir)\n" in out
    negated = only(NAME, PROBE_DECIDES.replace("if os.path.isdir(logdir):\n        res = input(\"overwrite?\")\n    else:\n        os.makedirs(logdir)",
                                             "if not os.path.isdir(logdir):\n        os.makedirs(logdir)\n    else:\n        res = input(\"overwrite?\")"))
    assert "    if not os.path.isdir(logdir):\n        barrier()\n        if is_main_process():\n            os.makedirs(logdir)\n" in negated
    alone = only(NAME, PROBE_DECIDES.replace("if os.path.isdir(logdir):\n        res = input(\"overwrite?\")\n    else:\n        os.makedirs(logdir)",
                                           "if not os.path.isdir(logdir):\n        os.makedirs(logdir)"))
    other = only(NAME, PROBE_DECIDES.replace("if os.path.isdir(logdir):", "if os.path.isdir('elsewhere'):"))
    assert "barrier()\n" not in alone.split("def set_logging_defaults")[1].split("log_path = ")[0]
    assert "        barrier()\n        if is_main_process():\n            os.makedirs" not in other


LEFT_EARLY_IF_THERE = """\
import os
import torch


def preprocess(output_path, overwrite=False):
    if os.path.exists(output_path):
        if overwrite:
            os.remove(output_path)
        else:
            print("already preprocessed")
            return
    os.mkdir(output_path)
    torch.save(torch.randn(8, 2), os.path.join(output_path, "x.pt"))


preprocess("prep")
xs = torch.load(os.path.join("prep", "x.pt"))
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model(xs).sum().backward()
    opt.step()
"""


@pytest.mark.parametrize("asked, barrier", [
    ("    if os.path.exists(output_path):\n        if overwrite:\n            os.remove(output_path)\n"
     "        else:\n            print(\"already preprocessed\")\n            return\n", True),  # PointNet's
    ("    if os.path.exists(output_path):\n        if not overwrite:\n            return\n"
     "        os.remove(output_path)\n", True),  # the early return first, the removal after it
    ("    if os.path.exists(output_path):\n        if overwrite:\n            os.remove(output_path)\n"
     "        elif os.listdir(output_path):\n            raise SystemExit(\"not empty\")\n", True),  # in an elif
    # near misses: nothing in the `if` leaves (every process goes on to the folder), or only a loop inside does
    ("    if os.path.exists(output_path):\n        if overwrite:\n            os.remove(output_path)\n"
     "        else:\n            print(\"already preprocessed\")\n", False),
    ("    if os.path.exists(output_path):\n        for name in os.listdir(output_path):\n            if name:\n"
     "                break\n", False),
], ids=["return_in_else", "return_first", "raise_in_elif", "no_return", "break_of_a_loop"])
def test_a_folder_made_below_an_if_that_asks_whether_it_exists_and_may_return_is_made_after_every_process_asked(
        asked, barrier):
    """PointNet's `preprocess_model_net` (28c): `if os.path.exists(output_path):` / `if overwrite:
    os.remove(...)` / `else: return`, then `os.mkdir(output_path)` on the main process only. Only
    an `if` whose body ends by leaving counted as the branch of the question, so no barrier went
    before the `mkdir`: a process that asked after the main process made the folder returned early,
    and the others waited at the barriers below (a hang under gloo). Now a return, raise or exit in
    a branch of an `if` inside counts: every process asks, a barrier, then the folder is made.
    Near misses: an `if` nothing in which leaves (every process goes on to the folder whatever it
    found), and a `break` of a loop inside it, get no barrier before the `mkdir` (nothing another
    process does depends on the answer)."""
    code = LEFT_EARLY_IF_THERE.replace(LEFT_EARLY_IF_THERE.split("def preprocess(output_path, overwrite=False):\n")[1]
                                       .split("    os.mkdir(")[0], asked)
    out = only(NAME, code)
    assert ("    barrier()\n    if is_main_process():\n        os.mkdir(output_path)\n" in out) is barrier, out
    if barrier:
        assert "    if is_main_process():\n        os.mkdir(output_path)\n    barrier()\n" in out, out


MADE_IF_MISSING = """\
import os
import torch


class Logger:
    def __init__(self):
        self.log = None

    def init(self, logdir):
        if self.log is None:
            if not os.path.exists(logdir):
                os.makedirs(logdir)
            self.log = os.path.join(logdir, "log.txt")

    def info(self, text):
        self.init("logs")


logger = Logger()
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    logger.info(str(epoch))
"""


def test_a_folder_made_where_it_is_missing_is_made_by_every_process_with_exist_ok():
    """`if not os.path.exists(d): os.makedirs(d)` in a logger's init, which every print runs
    (aaron-xichen/pytorch-playground's utee.misc.Logger, with `print = logger.info`): guarded with a
    barrier after it, the processes met at different barriers and the run hung, silently. Every
    process makes the folder with exist_ok=True, unguarded, no barrier; a makedirs with no such
    test stays guarded."""
    out = only(NAME, MADE_IF_MISSING)
    assert "            if not os.path.exists(logdir):\n                os.makedirs(logdir, exist_ok=True)\n" in out
    assert "barrier" not in out
    bare = only(NAME, MADE_IF_MISSING.replace("            if not os.path.exists(logdir):\n                os.makedirs",
                                              "            if logdir:\n                os.makedirs"))
    assert "exist_ok" not in bare and "is_main_process()" in bare


LOG_FILE = """\
import logging
import logging.handlers
import torch


class Logger(object):
    def __init__(self, log_file_name, logger_name):
        self.__logger = logging.getLogger(logger_name)
        file_handler = logging.FileHandler(log_file_name)
        file_handler.setFormatter(logging.Formatter("%(message)s"))
        self.__logger.addHandler(file_handler)
        self.__logger.addHandler(logging.StreamHandler())
        self.__logger.addHandler(logging.handlers.RotatingFileHandler("all.log"))

    def get_log(self):
        return self.__logger


logger = Logger("log.txt", "CIFAR").get_log()
logging.FileHandler("x.log").setLevel(logging.INFO)
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(4, 2):
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()
    logger.info("step")
"""


def test_a_logging_file_handler_is_made_on_the_main_process_only_a_null_handler_elsewhere():
    """BIGBALLON/CIFAR-ZOO's utils.Logger adds a logging.FileHandler: every process appended to
    log.txt (the runtime's self-check named it). The handler is made on the main process only, a
    NullHandler elsewhere (it takes setFormatter and addHandler); a stream handler stays, and a
    handler made under the user's own rank test is left as it is."""
    out = only(NAME, LOG_FILE)
    assert "file_handler = logging.FileHandler(log_file_name) if is_main_process() else NullHandler()\n" in out
    assert "logging.handlers.RotatingFileHandler(\"all.log\") if is_main_process() else NullHandler())" in out
    assert "(logging.FileHandler(\"x.log\") if is_main_process() else NullHandler()).setLevel(" in out
    assert "self.__logger.addHandler(logging.StreamHandler())\n" in out
    assert "from logging import NullHandler\n" in out
    guarded = only(NAME, LOG_FILE.replace("        file_handler = logging.FileHandler(log_file_name)\n",
                                          "        if rank == 0:\n"
                                          "            file_handler = logging.FileHandler(log_file_name)\n"))
    assert "            file_handler = logging.FileHandler(log_file_name)\n" in guarded
    compile(out, "log_file.py", "exec")



BASIC_CONFIG = """\
import logging
import torch

logging.basicConfig(filename="train.log", filemode="w", level=logging.INFO, format="%(message)s")
logging.basicConfig(filename=args.log if args.log else "run.log")
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(4, 2):
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()
    logging.info("step")
"""


def test_logging_basic_config_opens_its_file_on_the_main_process_only():
    """`logging.basicConfig(filename=...)` opens the root logger's file where it runs: every process
    appended its records to train.log (a Kaggle-style variant written for the eleventh fresh sweep,
    part C; the sweep's probe records only the program's own opens, so the judge saw nothing). The
    file is the main process's, `os.devnull` elsewhere, and every process keeps the level and format;
    a call under the user's own rank test is left as it is."""
    out = only(NAME, BASIC_CONFIG)
    assert ('logging.basicConfig(filename="train.log" if is_main_process() else devnull, filemode="w", '
            'level=logging.INFO, format="%(message)s")\n') in out
    assert 'logging.basicConfig(filename=(args.log if args.log else "run.log") if is_main_process() else devnull)\n' in out
    assert "from os import devnull\n" in out and "NullHandler" not in out
    guarded = only(NAME, BASIC_CONFIG.replace('logging.basicConfig(filename="train.log"',
                                              'if rank == 0:\n    logging.basicConfig(filename="train.log"'))
    assert '    logging.basicConfig(filename="train.log", filemode="w"' in guarded
    compile(out, "basic_config.py", "exec")

DICT_CONFIG = """\
import json
import logging
import logging.config
from logging.config import dictConfig as configure
import torch

with open("logger_config.json") as f:
    config = json.load(f)
logging.config.dictConfig(config)
configure({"version": 1, "handlers": {"f": {"class": "logging.FileHandler", "filename": "b.log"}}})
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(4, 2):
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()
    logging.info("step")
"""


def test_a_logging_configuration_dict_keeps_its_log_files_on_the_main_process():
    """pytorch-template's `logger/logger.py` (the fifteenth sweep's traffic_gru, decision 0115):
    `logging.config.dictConfig(config)` from a JSON whose handler writes `info.log` made every
    process write it, named only by the self-check. The dict goes through `log_config_on_main`,
    whose file handlers are NullHandlers off the main process; one under the user's rank test is
    left as it is."""
    out = only(NAME, DICT_CONFIG)
    assert "logging.config.dictConfig(log_config_on_main(config))\n" in out
    assert 'configure(log_config_on_main({"version": 1, ' in out
    assert "from ddpify_runtime import log_config_on_main" in out
    guarded = only(NAME, DICT_CONFIG.replace("logging.config.dictConfig(config)",
                                             "if rank == 0:\n    logging.config.dictConfig(config)"))
    assert "    logging.config.dictConfig(config)\n" in guarded
    compile(out, "dict_config.py", "exec")


FILE_CONFIG = """\
import logging
import logging.config
from logging.config import fileConfig
import torch

logging.config.fileConfig("logging.conf", {"logdir": "runs"}, disable_existing_loggers=False)
fileConfig(open("other.conf"), encoding="utf-8")
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(4, 2):
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()
    logging.info("step")
"""


def test_a_logging_configuration_file_keeps_its_log_files_on_the_main_process():
    """`logging.config.fileConfig("logging.conf", defaults)`: an INI file whose FileHandler every
    process opened, as dictConfig's did before `log_config_on_main` (decision 0125; 0134). The file
    goes through `log_config_on_main` with the defaults and encoding the call gives, which reads it
    with them off the main process; one under the user's rank test is left as it is."""
    out = only(NAME, FILE_CONFIG)
    assert 'logging.config.fileConfig(log_config_on_main("logging.conf", {"logdir": "runs"}), {"logdir": "runs"}, ' \
        "disable_existing_loggers=False)\n" in out
    assert 'fileConfig(log_config_on_main(open("other.conf"), encoding="utf-8"), encoding="utf-8")\n' in out
    assert "from ddpify_runtime import log_config_on_main" in out
    guarded = only(NAME, FILE_CONFIG.replace("logging.config.fileConfig(", "if rank == 0:\n    logging.config.fileConfig("))
    assert '    logging.config.fileConfig("logging.conf", {"logdir": "runs"}, disable_existing_loggers=False)\n' in guarded
    compile(out, "file_config.py", "exec")


def test_a_barrier_after_copies_in_a_loop_under_a_folder_test_is_placed_after_that_test():
    """`if not os.path.exists(d): makedirs(d); for f in files: copyfile(f, d)` read back later
    (BYOL's training folder): a process that finds the folder the main process made skips the
    loop, so the barrier goes after the `if`, where every process passes, not in the loop."""
    from ddpify.convert import convert
    code = TRAINS_FOLDER
    out = convert(code).code.splitlines()
    barriers = [line for line in out if line.strip() == "barrier()"]
    assert barriers == ["    barrier()"], out
    assert out[out.index("    barrier()") - 1].strip().startswith("copyfile(")


TRAINS_FOLDER = """\
import os
from shutil import copyfile
import torch
from torch.utils.data import DataLoader


def make_folder(folder, files):
    if not os.path.exists(folder):
        os.makedirs(folder, exist_ok=True)
        for file in files:
            copyfile(file, os.path.join(folder, os.path.basename(file)))


model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
make_folder("runs/x", ["t.py"])
for x in DataLoader(torch.randn(8, 2), batch_size=4, shuffle=True):
    model(x).sum().backward()
    optimizer.step()
print(open("runs/x/t.py").read()[:10])
"""


EXIST_OK_FALSE = """\
import os
import sys
import torch
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
try:
    os.makedirs("out", exist_ok=False)
except FileExistsError:
    sys.exit("out exists")
for epoch in range(2):
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
"""


def test_a_folder_made_with_exist_ok_false_is_made_by_the_main_process_only():
    """pytorch_warmup's EMNIST example: `os.makedirs(out, exist_ok=False)` in a `try` whose
    `except FileExistsError` exits. On every process, the slower one found the folder made and
    exited, and the other failed in DDP's constructor. `exist_ok=False` (by keyword or third
    positional) is no `exist_ok`: the main process makes the folder; `exist_ok=True` stays
    everywhere."""
    out = only(NAME, EXIST_OK_FALSE)
    assert "try:\n    if is_main_process():\n        os.makedirs(\"out\", exist_ok=False)\n" in out
    positional = only(NAME, EXIST_OK_FALSE.replace("exist_ok=False", "0o777, False"))
    assert "    if is_main_process():\n        os.makedirs(\"out\", 0o777, False)\n" in positional
    tolerant = only(NAME, EXIST_OK_FALSE.replace("exist_ok=False", "exist_ok=True"))
    assert "is_main_process" not in tolerant


WRITER_IN_A_NAMESPACE = """\
import argparse
import torch
from torch.utils.tensorboard import SummaryWriter


def parse():
    config = argparse.Namespace(lr=0.1)
    config.tb_logger = SummaryWriter("runs")
    return config


class Runner:
    def __init__(self, config):
        self.config = config

    def train(self):
        tb_logger = self.config.tb_logger
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=self.config.lr)
        for step in range(2):
            loss = model(torch.ones(1, 2)).sum()
            tb_logger.add_scalar("loss", loss, global_step=step)
            loss.backward()
            opt.step()


Runner(parse()).train()
"""


def test_a_writer_stored_in_a_namespace_and_read_through_a_runner_is_used_on_the_main_process_only():
    """DDIM: `new_config.tb_logger = tb.SummaryWriter(...)` (None off the main process), and in the
    runner of another module `tb_logger = self.config.tb_logger; tb_logger.add_scalar(...)`: rank 1
    crashed on None, and the program's own `except Exception` hid it. The object core follows the
    store into the namespace: the logging call is the main process's; the config's other reads
    (`self.config.lr`) stay."""
    out = only(NAME, WRITER_IN_A_NAMESPACE)
    assert 'config.tb_logger = SummaryWriter("runs") if is_main_process() else None\n' in out
    assert '            if is_main_process():\n                tb_logger.add_scalar("loss", loss, global_step=step)\n' in out
    assert "lr=self.config.lr)" in out and "from_main_process" not in out


def test_a_folder_made_if_missing_keeps_one_exist_ok():
    """`if not os.path.exists(d): os.makedirs(d, 0o777, False)`: every process makes the folder
    if it is missing, with `exist_ok=True` in place of the third positional (both given is
    Python's TypeError, "got multiple values for argument 'exist_ok'")."""
    made = EXIST_OK_FALSE.replace('try:\n    os.makedirs("out", exist_ok=False)\nexcept FileExistsError:\n    sys.exit("out exists")\n',
                                  'if not os.path.exists("out"):\n    os.makedirs("out", 0o777, False)\n')
    assert 'os.makedirs("out", 0o777, exist_ok=True)' in only(NAME, made)


HEADER_THEN_ROWS = """\
import csv
import os
import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
if not os.path.exists("log.csv"):
    with open("log.csv", "w") as logfile:
        logwriter = csv.writer(logfile)
        logwriter.writerow(["epoch", "loss"])
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    with open("log.csv", "a") as logfile:
        logwriter = csv.writer(logfile)
        logwriter.writerow([epoch, loss.item()])
"""


def test_a_name_the_block_binds_that_is_bound_again_before_each_later_read_does_not_keep_the_write_on_every_process():
    """mixup's cifar/easy_mixup.py (seventh fresh sweep, held out): the CSV header block binds
    `logwriter`, and the epoch loop reads `logwriter` only after its own `logwriter =
    csv.writer(logfile)`. The header was left on every process with a TODO ("the block also sets
    `logwriter`, used below"), and both processes wrote it. A later read the block's binding
    cannot reach keeps nothing; a read it reaches (`vocab` above) still does."""
    out = only(NAME, HEADER_THEN_ROWS)
    assert "TODO" not in out
    assert out.count("is_main_process()") == 2


ASSERTED_NEW = """\
import os
import torch
from torch.utils.tensorboard import SummaryWriter

run_dir = os.path.join("runs", "pcnn")
assert not os.path.exists(run_dir), "already exists"
writer = SummaryWriter(log_dir=run_dir)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    loss = model(torch.ones(1, 2)).sum()
    loss.backward()
    opt.step()
    writer.add_scalar("loss", loss.item(), epoch)
"""


def test_a_folder_every_process_asserts_absent_is_made_after_every_process_asked():
    """pclucas14/pixel-cnn-pp (eighth fresh sweep, tuning): `assert not os.path.exists(run_dir)`,
    then `SummaryWriter(log_dir=run_dir)`, which makes the folder, on the main process only: a
    process that asked after the main process made it failed the assertion (by timing: the sweep's
    run passed). Every process asks, then a barrier, then the writer; the same for `os.makedirs`
    of the folder asked about, and after `if os.path.exists(run_dir): raise ...`. Near misses: a
    writer of another folder, no question asked, and a question only the main process acts on
    (`if os.path.exists(d): shutil.rmtree(d)`, the pair `removing_and_renaming_files_...`). Where
    not every process may reach the line (inside a `try`), a TODO says where the barrier belongs."""
    out = only(NAME, ASSERTED_NEW)
    assert "\nbarrier()\nwriter = SummaryWriter(log_dir=run_dir) if is_main_process() else None\n" in out
    made = only(NAME, ASSERTED_NEW.replace("writer = SummaryWriter(log_dir=run_dir)", "os.makedirs(run_dir)")
                .replace("    writer.add_scalar(\"loss\", loss.item(), epoch)\n", ""))
    assert "\nbarrier()\nif is_main_process():\n    os.makedirs(run_dir)\n" in made
    raised = only(NAME, ASSERTED_NEW.replace("assert not os.path.exists(run_dir), \"already exists\"\n",
                                             "if os.path.exists(run_dir):\n    raise SystemExit(\"already exists\")\n"))
    assert "\nbarrier()\nwriter = SummaryWriter(log_dir=run_dir) if is_main_process() else None\n" in raised
    other = only(NAME, ASSERTED_NEW.replace("SummaryWriter(log_dir=run_dir)", "SummaryWriter(log_dir='elsewhere')"))
    unasked = only(NAME, ASSERTED_NEW.replace("assert not os.path.exists(run_dir), \"already exists\"\n", ""))
    assert "barrier()" not in other and "barrier()" not in unasked
    tried = only(NAME, ASSERTED_NEW.replace(
        "assert not os.path.exists(run_dir), \"already exists\"\nwriter = SummaryWriter(log_dir=run_dir)\n",
        "try:\n    assert not os.path.exists(run_dir)\n    writer = SummaryWriter(log_dir=run_dir)\nexcept OSError:\n    pass\n"))
    assert not [line for line in tried.splitlines() if line.strip() == "barrier()"]
    assert "    # TODO(ddpify): every process asks whether `run_dir` exists before the main process makes it" in tried


def test_loggers_kept_in_a_dict_are_guarded_where_an_item_or_a_loop_over_its_values_uses_them():
    """A trainer keeps one SummaryWriter per split in a dict (`self.writer['train'] =
    SummaryWriter(...)`), logs through `self.writer[tag].add_scalar(...)` and closes them in `for k, v
    in self.writer.items(): v.flush(); v.close()`: the writers were made on the main process only
    (None elsewhere) but these uses ran everywhere (AttributeError on None), with nothing in the
    report: a use through an item had no dotted name, and a loop's `v` held nothing known."""
    code = """\
import torch
from torch.utils.tensorboard import SummaryWriter


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.writer = dict()
        self.writer['train'] = SummaryWriter("runs/train")
        self.writer['val'] = SummaryWriter("runs/val")

    def _log(self, tag, epoch, **kwargs):
        for k, v in kwargs.items():
            self.writer[tag].add_scalar(k, v, epoch)

    def fit(self):
        for epoch in range(2):
            for x in torch.randn(3, 4, 2):
                self.opt.zero_grad()
                loss = self.model(x).sum()
                loss.backward()
                self.opt.step()
            self._log('train', epoch, loss=loss.item())
        for w in self.writer.values():
            w.flush()
        for k, v in self.writer.items():
            v.close()


Trainer().fit()
"""
    out = only(NAME, code)
    assert "            if is_main_process():\n                self.writer[tag].add_scalar(k, v, epoch)\n" in out
    assert "            if is_main_process():\n                w.flush()\n" in out
    assert "            if is_main_process():\n                v.close()\n" in out


HOOKS_HANDED_THE_TRAINER = """\
import torch


class BestSaver:
    def __init__(self):
        self.best = 0.0

    def epoch_end(self, acc):
        if acc > self.best:
            self.best = acc
            self.trainer.save_ckpt("best.pth")


class Trainer:
    def __init__(self, model, hooks):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        self.hooks = hooks
        for hook in hooks:
            hook.trainer = self

    def save_ckpt(self, name):
        torch.save(self.model.state_dict(), name)

    def train(self, epochs):
        for epoch in range(epochs):
            self.opt.zero_grad()
            self.model(torch.randn(4, 2)).sum().backward()
            self.opt.step()
            for hook in self.hooks:
                hook.epoch_end(float(epoch))


Trainer(torch.nn.Linear(2, 1), [BestSaver()]).train(2)
"""


def test_a_helper_that_only_writes_reached_through_an_object_that_handed_itself_to_the_caller_is_guarded():
    """`hook.trainer = self` for each hook in the Trainer, then the hook's `self.trainer.save_ckpt(...)`
    (laurent3577's Validation hook saving the best checkpoint): the save ran on every process, silently,
    as `self.trainer` was of no known class in the hook. It is now the class that hands itself over under
    that name; an attribute also given anything else on other objects names no class."""
    out = only(NAME, HOOKS_HANDED_THE_TRAINER)
    assert "            if is_main_process():\n                self.trainer.save_ckpt(\"best.pth\")\n" in out
    mixed = only(NAME, HOOKS_HANDED_THE_TRAINER.replace("Trainer(torch.nn.Linear(2, 1), [BestSaver()]).train(2)",
                                                        "spare = BestSaver()\nspare.trainer = None\n"
                                                        "Trainer(torch.nn.Linear(2, 1), [BestSaver()]).train(2)"))
    assert "is_main_process():\n                self.trainer.save_ckpt(" not in mixed


def test_a_clearml_task_is_made_on_the_main_process_only_and_its_calls_guarded():
    """`task = Task.init(...)` of ClearML (or of `trains`, its former name, as laurent3577's train.py
    imports it), then `task.connect(config)`: every process opened a task on the server, silently. It
    is now a logger like a wandb run: made on the main process only, None elsewhere, its calls guarded."""
    code = ("import torch\nfrom {module} import Task\n\ntask = Task.init(project_name='p', task_name='t')\n"
            "task.connect({{'lr': 0.1}}, 'Config')\nmodel = torch.nn.Linear(2, 1)\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(2):\n    opt.zero_grad()\n"
            "    model(torch.randn(4, 2)).sum().backward()\n    opt.step()\n")
    for module in ("clearml", "trains"):
        out = only(NAME, code.format(module=module))
        assert "task = Task.init(project_name='p', task_name='t') if is_main_process() else None\n" \
               "if is_main_process():\n    task.connect({'lr': 0.1}, 'Config')\n" in out
    assert "is_main_process()" not in only(NAME, code.format(module="mytasks"))


def test_mlflow_tracking_calls_run_on_the_main_process_only():
    """The twenty-first sweep's WGAN-GP (tuning half): a logger class of the program calls
    `mlflow.start_run(run_name=...)` and `mlflow.log_metric(name, value, step)`; every process started
    a run of its own and logged each metric into it (not a file the probe sees: silent). MLflow's
    tracking calls are guarded like wandb's, the run they start made on the main process only."""
    code = ("import mlflow\nimport torch\n\nmlflow.set_experiment('gan')\nrun = mlflow.start_run(run_name='r')\n"
            "model = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(2):\n"
            "    opt.zero_grad()\n    loss = model(torch.randn(4, 2)).sum()\n    loss.backward()\n    opt.step()\n"
            "    mlflow.log_metric('loss', loss.item(), step=epoch)\nprint(mlflow.get_tracking_uri())\nmlflow.end_run()\n")
    out = only(NAME, code)
    assert "if is_main_process():\n    mlflow.set_experiment('gan')\n" in out
    assert "run = mlflow.start_run(run_name='r') if is_main_process() else None\n" in out
    assert "    if is_main_process():\n        mlflow.log_metric('loss', loss.item(), step=epoch)\n" in out
    assert "print(mlflow.get_tracking_uri())\nif is_main_process():\n    mlflow.end_run()\n" in out  # a read stays
    assert "is_main_process()" not in only(NAME, code.replace("import mlflow", "import tracking as mlflow"))


@pytest.mark.parametrize("opened, changed", [
    ("with mlflow.start_run(run_name='r'):\n", True),  # MLflow's own idiom
    ("with mlflow.start_run() as run:\n", True),  # bound, never read
    ("with mlflow.start_run() as run:\n    print(run.info.run_id)\n", True),  # read in the block (below)
    ("with mlflow.start_run() as (run):\n    print(run.info.run_id)\n", True),
])
def test_a_tracker_run_opened_by_with_is_the_main_processs_and_a_null_context_elsewhere(opened, changed):
    """`with mlflow.start_run():` around the training (a variation of the twenty-first sweep's WGAN-GP,
    whose logger starts its run by a statement): every process opened a run of its own. The run is
    opened on the main process only, a null context elsewhere, the block running everywhere. What
    `as` binds and the block reads is the main process's run, None elsewhere (decision 0171:
    0156's Left): its reads are shared, its calls guarded
    (`test_a_run_bound_by_with_and_read_in_the_block_is_read_from_the_main_process`)."""
    code = ("import mlflow\nimport torch\n\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            + opened + "    for epoch in range(2):\n        opt.zero_grad()\n        loss = model(torch.randn(4, 2)).sum()\n"
            "        loss.backward()\n        opt.step()\n        mlflow.log_metric('loss', loss.item(), step=epoch)\n")
    out = only(NAME, code)
    head = opened.splitlines()[0].removeprefix("with ").removesuffix(":")
    call, _, bound = head.partition(" as ")
    assert (f"with ({call} if is_main_process() else nullcontext()){' as ' + bound if bound else ''}:\n" in out) is changed
    assert "        if is_main_process():\n            mlflow.log_metric('loss', loss.item(), step=epoch)\n" in out


def test_a_run_bound_by_with_and_read_in_the_block_is_read_from_the_main_process():
    """`with mlflow.start_run() as run:` whose block reads `run.info.run_id` (0156's Left) was left on
    every process, each opening a run of its own and logging into it. The run is the main process's,
    None elsewhere, a logger as any other: the read takes the main process's value on every process
    (the run's `with` swallows nothing its block raises, so every process reaches the read), a call
    of the run's methods (`run.log(...)`, wandb's) and a save naming the run are guarded."""
    code = ("import mlflow\nimport wandb\nimport torch\n\nmodel = torch.nn.Linear(2, 1)\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "with mlflow.start_run(run_name='r') as run, wandb.init(project='p') as board:\n"
            "    run_id = run.info.run_id\n    for epoch in range(2):\n        opt.zero_grad()\n"
            "        loss = model(torch.randn(4, 2)).sum()\n        loss.backward()\n        opt.step()\n"
            "        board.log({'loss': loss.item()})\n    torch.save(model.state_dict(), f'model_{run_id}.pt')\n")
    out = only(NAME, code)
    assert "with (mlflow.start_run(run_name='r') if is_main_process() else nullcontext()) as run, " \
           "(wandb.init(project='p') if is_main_process() else nullcontext()) as board:\n" in out
    assert "    run_id = from_main_process(lambda: run.info.run_id)\n" in out
    assert "        if is_main_process():\n            board.log({'loss': loss.item()})\n" in out


PLOT_HELPER = """\
import matplotlib.pyplot as plt
import torch
from PIL import Image


def plot_losses(losses, path):
    plt.plot(losses)
    plt.savefig(path)


def main():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for epoch in range(2):
        loss = model(torch.randn(4, 2)).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        plot_losses(losses, "losses.png")
    model.load_state_dict(torch.load("best.pt"))
{read}

main()
"""


@pytest.mark.parametrize("read, barrier", [
    ("", False),  # the plot is read by no one: the checkpoint read later is another file
    ("    shown = Image.open('losses.png')", True),  # a picture reader may read it back
    ("    raw = open('losses.png', 'rb').read()", True),  # and so may a file opened in binary
    ("    notes = open('notes.txt').read()", False),  # a text file read later is no picture
])
def test_a_plot_is_followed_by_a_barrier_only_where_a_picture_may_be_read_back(read, barrier):
    """The tenth sweep's plotting helpers (a confusion matrix's `plt.savefig` in `utils.py`): a
    barrier after the main process's plot, where no process reads a picture back, only waited."""
    converted = only(NAME, PLOT_HELPER.format(read=read))
    assert "plt.savefig(path)" in converted and ("barrier()\n" in converted) == barrier


def test_a_plot_is_not_read_back_by_a_data_sets_own_picture_reads():
    """knee_train's and DiscoGAN's data sets open their samples with `Image.open` in `__getitem__`
    (or a function their `__init__` calls): those reads are of the data, not of the plots."""
    data_set = """\
class Pictures(torch.utils.data.Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return Image.open(self.paths[i])


"""
    code = PLOT_HELPER.format(read="    data = Pictures(['a.png'])").replace("\n\ndef main", "\n\n" + data_set + "def main", 1)
    converted = only(NAME, code)
    assert "class Pictures" in converted and "barrier()" not in converted
    prepared = data_set.replace("        self.paths = paths\n", "        self.paths = paths\n        split(paths)\n")
    split = "def split(paths):\n    for path in paths:\n        Image.open(path).crop((0, 0, 1, 1))\n\n\n"
    code = PLOT_HELPER.format(read="    data = Pictures(['a.png'])").replace("\n\ndef main", "\n\n" + split + prepared + "def main", 1)
    assert "barrier()" not in only(NAME, code)  # a function only the data set's `__init__` calls


@pytest.mark.parametrize("added", [
    "self.agents.extend(more)",  # items ddpify cannot tell: extend, +=
    "self.agents += more",
])
def test_a_save_through_an_item_of_a_container_with_untold_items_is_guarded_inside_the_helper(added):
    """After f7e210b a list also given items by `extend` or `+=` names no class, and a save through
    its items stayed on every process without a word; it was named then (a TODO at the call). Since
    the eighteenth sweep's part B a helper that only writes and that no call ddpify follows reaches
    (`Agent.save` here) has its writes guarded inside it: whatever runs it, one process writes."""
    code = AGENTS_IN_A_LIST.replace("self.agents.append(Agent())", added).replace("def __init__(self, levels):",
                                                                                  "def __init__(self, levels, more=()):")
    out = only(NAME, code)
    assert "    def save(self, name):\n        if is_main_process():\n            with atomic_write(" in out, out
    assert "cannot tell what every item" not in out
    told = only(NAME, AGENTS_IN_A_LIST)  # every item an Agent: guarded, nothing to name
    assert "cannot tell what every item" not in told


def test_a_save_through_the_items_of_a_container_passed_in_is_named():
    code = AGENTS_IN_A_LIST + "\n\ndef save_all(agents, name):\n    for agent in agents:\n        agent.save(name)\n\n\n" \
        "save_all(team.agents, 'all')\n"
    assert "# TODO(ddpify): ddpify cannot tell what every item of `agents` is" in only(NAME, code)


def test_a_save_read_back_under_the_main_guard_gets_its_barrier_before_the_read():
    """`if __name__ == "__main__":` around a script that saves its model and loads it back: the
    test was taken for one that may differ between processes, so the barrier went after the whole
    block, and the other processes read the file while the main process was still writing it."""
    code = """\
import torch

if __name__ == "__main__":
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in torch.randn(3, 4, 2):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    torch.save(model.state_dict(), "m.pt")
    model.load_state_dict(torch.load("m.pt"))
    print("reloaded")
"""
    out = only(NAME, code)
    assert "            torch.save(model.state_dict(), tmp_path)\n    barrier()\n    model.load_state_dict(" in out
    assert not out.rstrip().endswith("barrier()")


def test_a_file_only_a_csv_writer_writes_rows_into_is_a_logger_of_the_main_process():
    """`log = open("log.csv", "w")`, `writer = csv.writer(log)`, rows written each epoch, then
    `log.close()`: every process opened and wrote the same file (each overwrote the others', torn or
    the last one's; only the runtime's self-check said so). The file and its writer are made on the
    main process only (None elsewhere) and each use is guarded; a writer handed on stays."""
    code = """\
import csv
import torch

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
log = open("log.csv", "w", newline="")
writer = csv.writer(log)
writer.writerow(["epoch", "loss"])
kept = open("kept.csv", "w")
rows = csv.writer(kept)
for epoch in range(2):
    for x in torch.randn(3, 4, 2):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
    writer.writerow([epoch, loss.item()])
    print(rows)
log.close()
"""
    out = only(NAME, code)
    assert 'log = open("log.csv", "w", newline="") if is_main_process() else None\n' in out
    assert "writer = csv.writer(log) if is_main_process() else None\n" in out
    assert '    if is_main_process():\n        writer.writerow([epoch, loss.item()])\n' in out
    assert "if is_main_process():\n    log.close()\n" in out
    assert 'kept = open_on_main("kept.csv", "w")\nrows = csv.writer(kept)\n' in out


def test_loggers_a_comprehension_or_a_display_builds_are_made_on_the_main_process_only():
    """`writers = [SummaryWriter(f"runs/{s}") for s in splits]` (or a dict display of them): every
    process made the writers and wrote their event files, and the report said nothing. Each is made
    on the main process only (None elsewhere), the container keeps its shape, and each use is
    guarded."""
    code = """\
import torch
from torch.utils.tensorboard import SummaryWriter

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
writers = [SummaryWriter(f"runs/{split}") for split in ("train", "val")]
named = {"train": SummaryWriter("runs/a"), "val": SummaryWriter("runs/b")}
for epoch in range(2):
    for x in torch.randn(3, 4, 2):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
    writers[0].add_scalar("loss", loss.item(), epoch)
    named["train"].add_scalar("loss", loss.item(), epoch)
for w in writers:
    w.close()
"""
    out = only(NAME, code)
    assert 'writers = [SummaryWriter(f"runs/{split}") if is_main_process() else None for split in ("train", "val")]\n' in out
    assert 'named = {"train": SummaryWriter("runs/a") if is_main_process() else None, ' \
           '"val": SummaryWriter("runs/b") if is_main_process() else None}\n' in out
    assert '    if is_main_process():\n        writers[0].add_scalar("loss", loss.item(), epoch)\n' \
           '        named["train"].add_scalar("loss", loss.item(), epoch)\n' in out
    assert "    if is_main_process():\n        w.close()\n" in out


def test_a_helper_that_only_writes_reached_through_an_object_the_caller_built_with_itself_is_guarded():
    """`self.hooks = [BestSaver(self)]` in the Trainer, the hook keeping `self.trainer = trainer` and later
    calling `self.trainer.save_ckpt(...)`: the save ran on every process, silently (the parameter `trainer`
    was of no known class: `self` passed from a method named none). `self` passed from a method of a class
    is now an instance of that class."""
    built = HOOKS_HANDED_THE_TRAINER.replace(
        "        for hook in hooks:\n            hook.trainer = self\n", "").replace(
        "    def __init__(self):\n        self.best = 0.0\n",
        "    def __init__(self, trainer):\n        self.trainer = trainer\n        self.best = 0.0\n").replace(
        "    def __init__(self, model, hooks):\n", "    def __init__(self, model):\n").replace(
        "        self.hooks = hooks\n", "        self.hooks = [BestSaver(self)]\n").replace(
        "Trainer(torch.nn.Linear(2, 1), [BestSaver()])", "Trainer(torch.nn.Linear(2, 1))")
    assert "BestSaver(self)" in built and "hook.trainer" not in built
    out = only(NAME, built)
    assert "            if is_main_process():\n                self.trainer.save_ckpt(\"best.pth\")\n" in out


def test_a_gif_saved_through_an_item_of_a_list_of_pil_images_is_written_once():
    """Plots saved into `io.BytesIO`, opened with PIL and appended to a list, then
    `frames[0].save("out.gif", append_images=frames, save_all=True)`: the item of the list was made
    by no maker ddpify knew (only names were followed), so every process wrote the GIF, silently.
    The in-memory saves stay on every process."""
    code = """\
import io
import torch
import matplotlib.pyplot as plt
from PIL import Image

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(3, 4, 2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
frames = []
for i in range(3):
    plt.clf()
    plt.scatter(*model(torch.randn(8, 2)).detach().T)
    buf = io.BytesIO()
    plt.savefig(buf, format="png")
    frames.append(Image.open(buf))
frames = frames + frames[::-1]
frames[0].save("out.gif", format="GIF", append_images=frames, save_all=True)
"""
    out = only(NAME, code)
    assert 'if is_main_process():\n    frames[0].save("out.gif", format="GIF", append_images=frames, save_all=True)\n' in out
    assert '    plt.savefig(buf, format="png")\n' in out


def test_a_picture_read_from_an_in_memory_buffer_is_no_read_after_a_save():
    """`torch.save(...)`, then a plot saved into `buf = io.BytesIO()` and opened with
    `Image.open(buf)`: no file is read back, so no barrier after the save (one went there, reported
    as "the file is read back below")."""
    code = """\
import io
import torch
import matplotlib.pyplot as plt
from PIL import Image

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(3, 4, 2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
torch.save(model.state_dict(), "model.pth")
buf = io.BytesIO()
plt.savefig(buf, format="png")
picture = Image.open(buf)
"""
    assert "barrier" not in only(NAME, code)


SHARED_SAVE = """\
import os
import torch
from torch.utils.data import DataLoader, Dataset


def save(obj, path):
    torch.save(obj, path)


class Points(Dataset):
    def __init__(self, root):
        self.path = os.path.join(root, "points.pt")
        if not os.path.exists(self.path):
            save(torch.randn(8, 2), self.path)
        self.data = torch.load(self.path)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i]


def check(result, folder):
    for name in result:
        save(result[name], os.path.join(folder, name))


model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Points("data"), batch_size=4, shuffle=True)
for epoch in range(2):
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    check({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "checkpoint")
"""


def test_a_save_helper_shared_by_a_data_set_and_the_checkpoints_writes_on_the_main_process():
    """RPipe (twelfth sweep): `save(obj, path)` writes the data set's processed files (built on each
    node's first process first, download-first) and, called by `check()`, every checkpoint file. As
    one of the functions the data set's building runs it was left to every process, so every
    process wrote the checkpoints (the self-check's shared-write). A helper the preparation shares
    with other code is not the preparation's own: its write is guarded."""
    out = only(NAME, SHARED_SAVE)
    assert "        if is_main_process():\n            save(result[name], os.path.join(folder, name))\n" in out
    assert "            save(torch.randn(8, 2), self.path)\n" in out  # the data set's: download-first's


LOGGED_PREPARATION = """\
import os
import torch
from torch.utils.data import DataLoader, Dataset


class Logger:
    def __init__(self, path):
        self.path = path

    def log(self, *args):
        message = " ".join(map(str, args))
        print(message)
        with open(self.path, "a") as f:
            print(message, file=f)

    def __call__(self, *args):
        self.log(*args)


class Points(Dataset):
    def __init__(self, root, logger):
        self.path = os.path.join(root, "points.pt")
        if not os.path.exists(self.path):
            logger("making", self.path)
            torch.save(torch.randn(8, 2), self.path)
        self.data = torch.load(self.path)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i]


logger = Logger("run.log")
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(Points("data", logger), batch_size=4, shuffle=True)
for epoch in range(2):
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
    logger("epoch", epoch)
"""


def test_what_a_helper_the_preparation_shares_calls_is_not_the_preparations_own():
    """Round 29's held-out kernelkd (29c; decision 0251): its `Logger.__call__` runs `self.log(...)`,
    which appends each line to the run's log; the logger is handed to the loaders' helper that
    download-first runs on each node's first process first. `__call__`, called from everywhere, was
    shared and not the preparation's own, but `log`, called from `__call__` alone, was: its write stayed
    on every process, and every process appended every line (the judge's `saves`). What a shared
    helper calls is shared too: the logger's line goes to the main process. Near miss: the data set's
    own file stays download-first's (every node's first process writes it first)."""
    out = only(NAME, LOGGED_PREPARATION)
    assert "    def __call__(self, *args):\n        if is_main_process():\n            self.log(*args)\n" in out
    assert "            torch.save(torch.randn(8, 2), self.path)\n" in out


PROBED_RUN_NAME = """\
import os
import torch


class Logger:
    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.run_name = self._free_name()
        self.lock_file = os.path.join(log_dir, f"{self.run_name}.lock")
        os.makedirs(log_dir, exist_ok=True)
        with open(self.lock_file, "w") as f:
            f.write("")

    def _free_name(self):
        n = 1
        while os.path.exists(os.path.join(self.log_dir, f"run_{n}.lock")):
            n += 1
        return f"run_{n}"


logger = Logger("runs")
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(3, 4, 2):
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()
torch.save(model.state_dict(), os.path.join("runs", f"{logger.run_name}.pt"))
"""


def test_a_file_named_by_probing_for_a_free_name_is_written_after_every_process_has_probed():
    """Round 29's held-out kernelkd (29c; decision 0251): its Logger names the run by `self.run_name =
    self._get_run_name()`, whose `while os.path.exists(...lock)` takes the next number, then writes that
    lock file on the main process; the second process, a moment late, found the lock and took the next
    number (a log of its own, `_#2`). A barrier goes before the write, through the attribute and the
    method's return, as before a folder so named. Near miss: a name not probed for (`self.run_name =
    "run"`) gets none."""
    out = only(NAME, PROBED_RUN_NAME)
    assert "        barrier()\n        if is_main_process():\n            with open(self.lock_file, \"w\") as f:\n" in out
    fixed = only(NAME, PROBED_RUN_NAME.replace("self.run_name = self._free_name()", 'self.run_name = "run"'))
    assert "        if is_main_process():\n            with open(self.lock_file, \"w\") as f:\n" in fixed
    assert "barrier()\n        if is_main_process():\n            with open(self.lock_file" not in fixed


CLOCKED_HELPER = """\
import time
import torch
from torch.utils.data import DataLoader, TensorDataset

def save_checkpoint(model, path):
    torch.save(model.state_dict(), path)
    return torch.load(path)

def train(every):
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    last = time.time()
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            optimizer.step()
        now = time.time()
        if now - last >= every:
            save_checkpoint(model, "m.pt")
            last = now
        {tail}

train(60)
"""


def test_a_helper_called_where_some_processes_may_not_call_it_gets_no_barrier_and_a_warning():
    """A checkpoint helper that saves and reads the file back, called under a test that reads each
    process's clock (SLURM-ready trainers: every so many seconds): a barrier in the helper waited for
    processes that did not call it (a hang, or a barrier met by their next gradient all-reduce); it is
    left out and the read that may race the write is named. Called by every process, it is placed."""
    clocked = rewritten(NAME, CLOCKED_HELPER.replace("{tail}", ""))
    assert "barrier()" not in clocked.code
    assert any("`save_checkpoint` is called where some processes may not call it" in w
               for w in warnings(clocked.changes))
    every = rewritten(NAME, CLOCKED_HELPER.replace("{tail}", "save_checkpoint(model, \"last.pt\")").replace(
        "        if now - last >= every:\n            save_checkpoint(model, \"m.pt\")\n", "        if epoch >= 0:\n            pass\n"))
    assert "barrier()" in every.code and not warnings(every.changes)
COUNTED_BAR = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


def train_one_epoch(loader, model, optimizer, pbar):
    for x, y in loader:
        for group in optimizer.param_groups:
            group["lr"] = 0.1 * min(1.0, (pbar.n + 1) / 4)
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
        pbar.update(1)


loader = DataLoader(TensorDataset(torch.randn(32, 2), torch.randn(32, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
pbar = tqdm(total=2 * len(loader))
for epoch in range(2):
    train_one_epoch(loader, model, optimizer, pbar)
shown = tqdm(total=3)
shown.update(1)
"""


def test_a_bar_whose_count_the_program_reads_counts_on_every_process():
    """vam_train (thirteenth sweep): `while pbar.n < total_steps:` and `if (pbar.n + 1) % step_log
    == 0:`, the bar handed to the function that reads it. Disabled on rank 1 (`disable=not
    is_main_process()`), it counted nothing there: `pbar.n` stayed 0, and a warm-up read from it
    (here) kept rank 1's learning rate at its start while rank 0's rose. Such a bar is written into
    the silenced standard output of the other processes (`file=bar_file()`, tests/test_runtime.py);
    a bar whose count nothing reads is still disabled there."""
    converted = only(NAME, COUNTED_BAR)
    assert "pbar = tqdm(total=2 * len(loader), file=bar_file())" in converted
    assert "shown = tqdm(total=3, disable=not is_main_process())" in converted


def test_a_save_method_that_returns_what_every_call_drops_is_guarded_where_it_is_called():
    """The thirteenth sweep's graph classifier: `def save(self, name=None): ...; torch.save(...);
    return name`, called as `model.save()` under `if val < best:`, then `model.load(path)` after the
    epochs. A function that returns a value was never a writer guarded where it is called, so the
    save was guarded inside it, and no barrier went in (its call is not reached by every process):
    a process ahead of the main one read the previous best, or none, passing only by timing. Now
    the call is guarded, and the barrier goes after its `if`, where every process passes."""
    code = """\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.fc(x)

    def save(self, name=None):
        if name is None:
            name = "best.pt"
        torch.save(self.state_dict(), name)
        return name

    def load(self, path):
        self.load_state_dict(torch.load(path))


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
best = float("inf")
for epoch in range(2):
    for x in torch.randn(3, 4, 2):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    val = model(torch.randn(4, 2)).sum().item()
    if val < best:
        best = val
        model.save()
    print(epoch)
model.load("best.pt")
"""
    out = only(NAME, code)
    assert "    if val < best:\n        best = val\n        if is_main_process():\n            model.save()\n" \
           "    barrier()\n    print(epoch)\n" in out
    assert "        with atomic_write(name) as tmp_path:\n            torch.save(self.state_dict(), tmp_path)\n" \
           "        return name\n" in out


def test_a_clocked_test_in_a_helper_that_some_processes_may_not_call_is_not_agreed():
    """The save and its read-back inside `if time.time() - last >= every:` of a helper that is itself
    called under a test that may differ (`if val_loss < best:`): an `agree_on` there is a collective
    the processes that skip the helper never join; the test stays as written, the save named."""
    code = """\
import time
import torch
from torch.utils.data import DataLoader, TensorDataset

def maybe_save(model, last, every):
    now = time.time()
    if now - last >= every:
        torch.save(model.state_dict(), "m.pt")
        model.load_state_dict(torch.load("m.pt"))
    return now

def train():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
    last, best = time.time(), float("inf")
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
        if loss.item() < best:
            best = loss.item()
            last = maybe_save(model, last, 60)

train()
"""
    out = rewritten(NAME, code)
    assert "agree_on" not in out.code and "barrier()" not in out.code
    assert any("`maybe_save` is called where some processes may not call it" in w for w in warnings(out.changes))
    called_by_all = rewritten(NAME, code.replace("        if loss.item() < best:\n            best = loss.item()\n"
                                                 "            last = maybe_save(model, last, 60)",
                                                 "        last = maybe_save(model, last, 60)"))
    assert "if agree_on(now - last >= every):" in called_by_all.code and "barrier()" in called_by_all.code


def test_a_file_written_after_an_if_that_returns_where_it_exists_waits_until_every_process_asked():
    """`if os.path.isfile("vocab.npy"): return np.load(...)`, then the vocabulary built, saved and
    read back (the early-return form of the fifteenth sweep's NER taggers' if/else): a process that
    asked after the main process had saved it returned early and never met the barrier after the
    save, where the main process waited for it (under torchrun, one process 3 s behind: a hang).
    Every process asks, then a barrier, then the save, as in the if/else form."""
    code = """\
import os
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

def build_vocab(path):
    if os.path.isfile("vocab.npy"):
        return np.load("vocab.npy", allow_pickle=True).item()
    vocab = {w: i for i, w in enumerate(open(path).read().split())}
    np.save("vocab.npy", vocab)
    return np.load("vocab.npy", allow_pickle=True).item()

vocab = build_vocab("corpus.txt")
model = torch.nn.Linear(len(vocab), 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(8, len(vocab)), torch.randn(8, 2)), batch_size=4, shuffle=True)
for x, y in loader:
    optimizer.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    optimizer.step()
"""
    out = rewritten(NAME, code)
    assert "    barrier()\n    if is_main_process():\n        np.save(\"vocab.npy\", vocab)\n    barrier()\n" in out.code
    assert any("every process has asked whether it exists" in c.message for c in out.changes)
    falls_through = rewritten(NAME, code.replace("        return np.load(\"vocab.npy\", allow_pickle=True).item()\n",
                                                 "        print(\"found\")\n"))
    assert "    barrier()\n    if is_main_process():\n        np.save" not in falls_through.code


def test_a_file_read_back_two_calls_below_the_write_gets_a_barrier():
    """`make_vocab(corpus, path)` writes the vocabulary, then `train(path)` reads it through
    `get_vocab(path)` (the fifteenth sweep part C's text CNN, held out, after its run; a fixture of
    ours): the read, two calls below the statement after the write, was not seen, and a process
    other than the main one could open the vocabulary before it was written, or while. The main
    process writes it, then a barrier, then the training."""
    code = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def make_vocab(corpus, path):
    words = sorted(set(open(corpus).read().split()))
    with open(path, "w") as f:
        f.write(" ".join(words))


def get_vocab(path):
    with open(path) as f:
        return {w: i for i, w in enumerate(f.read().split())}


def train(path):
    vocab = get_vocab(path)
    model = torch.nn.Linear(len(vocab), 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, len(vocab)), torch.randn(8, 2)), batch_size=4, shuffle=True)
    for x, y in loader:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()


make_vocab("corpus.txt", "vocab.txt")
train("vocab.txt")
"""
    out = rewritten(NAME, code)
    assert out.code.endswith('if is_main_process():\n    make_vocab("corpus.txt", "vocab.txt")\nbarrier()\ntrain("vocab.txt")\n')
    assert any("barrier() after the save: the file is read back below" in c.message for c in out.changes)


def test_a_test_written_against_its_parenthesis_stays_parenthesized_when_agreed():
    """`if(os.path.isfile("vocab.npy")):` (no space after `if`, the fifteenth sweep's homework NER
    taggers) whose branches read the vocabulary back or build, save and read it: the agreed test
    keeps its parentheses around `agree_on(...)`; `ifagree_on(...)` made LibCST refuse the module,
    an internal error and nothing converted."""
    code = """\
import os
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

def build_vocab(path):
    if(os.path.isfile("vocab.npy")):
        vocab = np.load("vocab.npy", allow_pickle=True).item()
    else:
        vocab = {w: i for i, w in enumerate(open(path).read().split())}
        np.save("vocab.npy", vocab)
        vocab = np.load("vocab.npy", allow_pickle=True).item()
    return vocab

vocab = build_vocab("corpus.txt")
model = torch.nn.Linear(len(vocab), 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(8, len(vocab)), torch.randn(8, 2)), batch_size=4, shuffle=True)
for x, y in loader:
    optimizer.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    optimizer.step()
"""
    out = rewritten(NAME, code)
    assert '    if(agree_on(os.path.isfile("vocab.npy"))):\n' in out.code
    assert out.code == rewritten(NAME, code.replace("if(os.path", "if (os.path")).code.replace("if (agree_on", "if(agree_on")


HANDED_OUT = """\
import torch
from collections import defaultdict
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model):
        self.model = model
        self.callbacks = defaultdict(list)

    def set_callback(self, onevent, callback):
        self.callbacks[onevent] = [callback]

    def run(self, loader):
        opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        for x, y in loader:
            opt.zero_grad()
            (self.model(x) - y).pow(2).mean().backward()
            opt.step()
            for callback in self.callbacks.get("on_batch_end", []):
                callback(self)


def log_row(trainer):
    with open("log.csv", "a") as f:
        f.write("row\\n")


def save(trainer):
    torch.save(trainer.model.state_dict(), "last.pt")


model = torch.nn.Linear(2, 1)
trainer = Trainer(model)
trainer.set_callback("on_batch_end", log_row)
save(trainer)
trainer.run(DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4))
"""


def test_a_writing_function_handed_out_as_a_callback_is_guarded_inside():
    """minGPT's `trainer.set_callback("on_batch_end", batch_end_callback)`: the trainer calls it
    through a dict of lists, a call ddpify does not resolve, so the CSV row it appends was written by
    every process when only its calls were guarded (binGPT's 2_transformer.py, the fourteenth sweep);
    a helper only called where ddpify sees it is still guarded at the call."""
    out = only(NAME, HANDED_OUT)
    assert '    if is_main_process():\n        with open("log.csv", "a") as f:\n            f.write("row\\n")' in out
    assert "\nif is_main_process():\n    save(trainer)\n" in out


ASKED = """\
import json
import os
import torch
from torch.utils.data import DataLoader, TensorDataset

path = "config.json"
if os.path.exists(path):
    with open(path) as f:
        config = json.load(f)
else:
    config = {"lr": 0.1}
    with open(path, "w") as f:
        json.dump(config, f)
if not os.path.exists("log.csv"):
    with open("log.csv", "w") as f:
        f.write("epoch,loss\\n")

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
for epoch in range(2):
    for x, y in DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
"""


def test_a_file_written_where_the_if_around_it_found_none_waits_until_every_process_has_asked():
    """binGPT's 2_transformer.py (the fourteenth sweep): `if os.path.exists(config.json)`: read it,
    `else`: build the configuration and write it. A process that asks after the main process has
    written it (or while it writes) takes the other branch and reads it, half-written maybe: a race
    that passed by timing. Every process asks, then a barrier, then the main process writes; a file
    whose `if` has no other branch needs none."""
    out = only(NAME, ASKED)
    assert '    config = {"lr": 0.1}\n    barrier()\n    if is_main_process():\n        with open(path, "w") as f:' in out
    assert 'if not os.path.exists("log.csv") and is_main_process():\n    with open("log.csv", "w") as f:' in out
    assert out.count("barrier()") == 1


@pytest.mark.parametrize("command", ['os.system(f"mkdir -p {out} && touch {out}/x")', 'subprocess.run(["cp", "a.txt", out])',
                                     'os.system("rm -rf " + out)', 'os.system(f"echo done > {out}/log.txt")'])
def test_a_shell_command_that_writes_files_on_every_process_is_named(command):
    """The thirteenth sweep's vam_train (`os.system(f'mkdir {dir}')`): a shell command that writes ran
    on every process, unread and unnamed; it is named at its line (not guarded: what it writes, and
    who reads it at once, is in a string). Not one that only reads (`nvidia-smi`, `git rev-parse`),
    nor one under the program's own rank test."""
    code = "import os\nimport subprocess\nout = 'runs'\n" + TRAINS.end_of_epoch.around(command + "\n")
    named = [w for w in warnings(rewritten(NAME, code).changes) if "runs a shell command that writes files" in w]
    assert len(named) == 1 and named[0].startswith(f"`{command.split('(')[0]}(...)`")
    for reads in ('os.system("nvidia-smi")', 'subprocess.run(["git", "rev-parse", "HEAD"])',
                  'os.system("ls data > /dev/null")'):
        assert not warnings(rewritten(NAME, "import os\nimport subprocess\n" + TRAINS.end_of_epoch.around(reads + "\n")).changes)
    guarded = "import os\nrank = int(os.environ['RANK'])\nout = 'runs'\nif rank == 0:\n    " + command.replace("subprocess.run", "os.system") + "\n"
    assert not [w for w in warnings(rewritten(NAME, guarded).changes) if "shell command" in w]


@pytest.mark.parametrize("command", ["os.system('mkdir {0}'.format(out))", 'os.system(f"mkdir {out}")',
                                     'os.system("mkdir " + out)', 'subprocess.run(["mkdir", out])'])
def test_a_lone_shell_mkdir_is_guarded_as_makedirs_and_with_parents_left_on_every_process(command):
    """The twenty-first sweep's GAN trainers (held out, decision 0157's Left; 0171): `os.system('mkdir
    {0}'.format(config.outf))` in each `main()` ran on every process with a warning; a lone `mkdir`
    makes a folder, as `os.makedirs(out)` does, and is guarded as that is (the processes race to make
    it). With `-p` it accepts a folder that exists, as `exist_ok=True` does: left on every process, no
    warning. Near miss: a `mkdir` joined with another command keeps the warning, unguarded."""
    code = "import os\nimport subprocess\nout = 'runs'\n" + TRAINS.end_of_epoch.around(command + "\n")
    result = rewritten(NAME, code)
    assert f"if is_main_process():\n        {command}\n" in result.code
    assert not [w for w in warnings(result.changes) if "shell command" in w]
    parents = command.replace("mkdir ", "mkdir -p ").replace('["mkdir", out]', '["mkdir", "-p", out]')
    result = rewritten(NAME, "import os\nimport subprocess\nout = 'runs'\n" + TRAINS.end_of_epoch.around(parents + "\n"))
    assert "is_main_process" not in result.code and not warnings(result.changes)
    joined = "os.system(f'mkdir {out}; cp a.txt {out}')"
    result = rewritten(NAME, "import os\nout = 'runs'\n" + TRAINS.end_of_epoch.around(joined + "\n"))
    assert "is_main_process" not in result.code and len(warnings(result.changes)) == 1


UNCALLED_SAVE = """\
import torch


class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(self, x):
        self.opt.zero_grad()
        self.model(x).sum().backward()
        self.opt.step()

    def save_model(self, epoch):
        torch.save({"model": self.model.state_dict(), "opt": self.opt.state_dict()}, f"model_{epoch}.pth")


trainer = Trainer(torch.nn.Linear(2, 1))
trainer.train(torch.randn(4, 2))
CALL
"""


@pytest.mark.parametrize("call, inside", [("", True), ("trainer.save_model(1)", False)])
def test_a_save_helper_the_program_never_calls_is_guarded_inside(call, inside):
    """The eighteenth sweep's part B (cgan_pairs): a Trainer's `save_model(epoch)`, every statement a
    write, that nothing in the program calls (left for the user), was taken for a helper guarded
    where it is called: with no call, its save ran on every process. Guarded inside it now; one the
    program calls stays guarded at its call (the near miss)."""
    result = rewritten(NAME, UNCALLED_SAVE.replace("CALL", call))
    assert ("    def save_model(self, epoch):\n        if is_main_process():\n" in result.code) is inside, result.code
    assert ("if is_main_process():\n    trainer.save_model(1)\n" in result.code) is (not inside), result.code


SAVE_OR_LOAD = """\
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--infer", action="store_true")
args = parser.parse_args()
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def main():
    if not args.infer:
        opt.zero_grad()
        model(torch.randn(4, 2)).sum().backward()
        opt.step()
        torch.save(model.state_dict(), "model.pt")
    else:
        model.load_state_dict(torch.load("model.pt"))
        print(model(torch.randn(1, 2)))


main()
"""


@pytest.mark.parametrize("change, barrier", [
    (None, False),
    (("def main():\n    if not args.infer:", "def main():\n  for rnd in range(2):\n    if not args.infer:"), True),  # a loop
    (("    else:\n        model.load", "    if True:\n        model.load"), True),  # read after the `if`, not in its `else`
])
def test_a_read_in_the_other_branch_of_the_if_around_a_save_waits_for_nothing(change, barrier):
    """The eighteenth sweep's part B (the seq2seq programs): `if not args.infer:` trains and saves the
    tokenizer, the model and the statistics; its `else:` loads them. One run takes one branch, so
    nothing the training branch writes is read back in that run: three barriers followed the saves
    ("the file is read back below"), false. Near misses: the `if` inside a loop (a later round may
    load what this one saved), a read after the `if` rather than in its `else`."""
    code = SAVE_OR_LOAD
    if change is not None:
        assert change[0] in code
        code = code.replace(change[0], change[1])
    result = rewritten(NAME, code)
    assert ("barrier()" in result.code) is barrier, result.code
    assert any("read back below" in c.message for c in result.changes) is barrier


TRAINER_INIT_WRITES = """\
import json
import os
import shutil
import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter


class Logger:
    def __init__(self, config, name):
        self.writer = SummaryWriter(log_dir=os.path.join("runs", name))

    def log(self, loss, step):
        self.writer.add_scalar("loss", loss, step)


class Trainer:
    def __init__(self, config, name):
        self.config = config
        self.lr = config["lr"]
        self.setup_save(name)
        self.logger = Logger(config, name)

    def setup_save(self, name):
        self.save_dir = os.path.join("results", name)
        os.makedirs(self.save_dir)
        shutil.copy("config.py", self.save_dir)
        with open(os.path.join(self.save_dir, "args.json"), "w") as f:
            json.dump(self.config, f)

    def fit(self, model):
        opt = torch.optim.SGD(model.parameters(), lr=self.lr)
        for step in range(3):
            opt.zero_grad()
            loss = model(torch.randn(2, 4)).sum()
            loss.backward()
            opt.step()
            self.logger.log(loss.item(), step)


CLASSES = {"trainer": Trainer, "logger": Logger}  # a registry by name: either may be built


def load_trainer(config, kind="trainer"):
    trainer = CLASSES[kind](config, "exp")
    return trainer


load_trainer({"lr": 0.1}).fit(nn.Linear(4, 1))
"""


def test_a_construction_runs_on_every_process_though_a_class_it_may_build_only_writes():
    """A traffic-demand framework (sweep 19a's held-out half, read after its run): `trainer =
    trainer_class(model_class, config, args)`, the class looked up by name among every class of the
    trainer modules, its logger class among them, whose `__init__` only makes a SummaryWriter: that
    `__init__` was taken for a helper that only writes, so the construction was guarded at the call,
    and the other processes had no `trainer` (UnboundLocalError at `return trainer`, silent by the
    rule). A construction makes the object the program keeps: it is guarded at the call only where
    every class it may build only writes (a logger class: None elsewhere); here a registry by name
    may build either class, and the trainer's writes are guarded inside it."""
    out = only(NAME, TRAINER_INIT_WRITES)
    assert 'def load_trainer(config, kind="trainer"):\n    trainer = CLASSES[kind](config, "exp")\n    return trainer' in out
    assert "if is_main_process():\n            os.makedirs(self.save_dir" in out


SAVED_AND_READ_UNDER_A_LOCK = """\
import torch
from filelock import FileLock
from torch.utils.data import DataLoader, TensorDataset
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4, shuffle=True)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    with FileLock('ckpt.lock'):
        torch.save(model.state_dict(), 'last.pt')
        model.load_state_dict(torch.load('last.pt'))
"""


def test_a_save_read_back_inside_the_statement_the_barrier_follows_is_named():
    """A save read back inside the same inter-process lock (`with FileLock(...)`: a variation of the
    twenty-second sweep's data module): the save runs on the main process, the barrier could only go
    after the `with` (inside, the main process would wait holding the lock the others wait for), and
    the read comes before it: another process may read the file before it is written. The report
    said nothing; now a warning at the save names the read and the lock. Near miss: under
    `torch.no_grad()` (torch's own `with`, which swallows nothing) the barrier goes right after the
    save, before the read, with no warning."""
    result = rewritten(NAME, SAVED_AND_READ_UNDER_A_LOCK, also=frozenset({"wrap-model", "unwrap-model"}))
    line = SAVED_AND_READ_UNDER_A_LOCK.splitlines().index("        torch.save(model.state_dict(), 'last.pt')") + 1
    assert [(c.line, c.message.split(" reads the file back")[0]) for c in result.changes if c.kind == "warning"] == \
           [(line, "this save runs on the main process only and `torch.load('last.pt')`")]
    assert "an inter-process lock" in warnings(result.changes)[0]
    plain = SAVED_AND_READ_UNDER_A_LOCK.replace("with FileLock('ckpt.lock'):", "with torch.no_grad():")
    result = rewritten(NAME, plain, also=frozenset({"wrap-model", "unwrap-model"}))
    assert not warnings(result.changes) and "        barrier()\n        model.module.load_state_dict" in result.code


STDOUT_TEED = """\
import os
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset


class Logger:
    def __init__(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.console = sys.stdout
        self.file = open(path, 'w')

    def write(self, msg):
        self.console.write(msg)
        self.file.write(msg)

    def flush(self):
        self.console.flush()
        self.file.flush()


sys.stdout = Logger('runs/log.txt')
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4, shuffle=True)
for x, y in loader:
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    print(x.shape)
sys.stdout.flush()
log = Logger('runs/other.txt')
"""


def test_a_logger_that_replaces_sys_stdout_is_the_main_processs_and_the_console_elsewhere():
    """The twenty-second sweep's distillation script (read after its held-out run): `sys.stdout =
    Logger(path)`, a tee that opens the log file in its constructor, was made on the main process
    only and None elsewhere: `print` then does nothing there, but `sys.stdout.flush()` (or tqdm's, or a
    logging handler's write) crashes. The other processes keep their console stream. Near miss: the
    same logger bound to a name of the program stays None elsewhere."""
    code = rewritten(NAME, STDOUT_TEED).code
    assert "sys.stdout = Logger('runs/log.txt') if is_main_process() else sys.stdout\n" in code
    assert "log = Logger('runs/other.txt') if is_main_process() else None\n" in code


TEE_READ_BACK = """\
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset


class Tee:
    def __init__(self, path):
        self.terminal = sys.stdout
        self.log = open(path, "a")

    def write(self, message):
        self.terminal.write(message)
        self.log.write(message)

    def flush(self):
        self.terminal.flush()
        self.log.flush()


def save_note(path):
    with open(path, "a") as f:
        f.write("note\\n")


sys.stdout = Tee("log.txt")
save_note("note.txt")
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4, shuffle=True)
for x, y in loader:
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
with open("log.txt") as f:
    print(len(f.read()))
with open("note.txt") as f:
    print(f.read())
"""


def test_no_barrier_in_the_constructor_of_a_logger_made_on_the_main_process_only():
    """Round 29's held-out DCGAN hung: `sys.stdout = utils.StdOut(path)` is made on the main process
    only (`... if is_main_process() else sys.stdout`), and its `__init__`'s `open(path, "a")`, read
    back later, got a barrier after it that only the main process reached. The barrier is left out
    and the read named. Near miss: a helper every process calls, whose file is read back, keeps a
    barrier after its (guarded) call."""
    result = rewritten(NAME, TEE_READ_BACK)
    code = result.code
    assert 'sys.stdout = Tee("log.txt") if is_main_process() else sys.stdout\n' in code
    init = code[code.index("def __init__"):code.index("def write")]
    assert "barrier()" not in init
    assert any("`__init__` makes a logger that runs on the main process only" in w for w in warnings(result.changes))
    assert 'if is_main_process():\n    save_note("note.txt")\nbarrier()\n' in code


SPREAD_BARS = """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm, trange


def options():
    return {"leave": False}


def train_epoch(model, opt, loader, epoch, verbose):
    kwargs = dict(desc="Epoch {}".format(epoch + 1), leave=False,
                  disable=not verbose)
    with trange(len(loader), **kwargs) as t:
        for x, y in loader:
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
            t.update()
    for x, y in tqdm(loader, **options()):
        pass
    for x, y in tqdm(loader, leave=False, disable=not verbose):
        pass
    shown = dict(desc="eval")
    for x, y in tqdm(loader, **shown):
        pass
    for x, y in tqdm(loader, disable=True):
        pass
    for x, y in tqdm(loader, disable=int(os.environ.get("RANK", 0)) != 0):
        pass


loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    train_epoch(model, opt, loader, epoch, True)
"""


def test_a_bar_given_disable_through_a_mapping_combines_it_where_it_is_written():
    """disentangling-vae's trainer (25c; decision 0206): `kwargs = dict(..., disable=not
    self.is_progress_bar)`, then `trange(len(data_loader), **kwargs)`; `disable=not
    is_main_process()` added beside `**kwargs` was a TypeError on every process, plain python too
    ("got multiple values for keyword argument 'disable'"). The program's `disable` is combined
    with the main-process test where it is written (in the dict, or in the call); a mapping whose
    keys are not known gets the test as a default its own entry replaces; near misses: a mapping
    known to lack `disable` (appended as before), a bar disabled everywhere or by the program's own
    rank test (left)."""
    out = only(NAME, SPREAD_BARS)
    assert "                  disable=not verbose or not is_main_process())\n" \
           "    with trange(len(loader), **kwargs) as t:\n" in out
    assert 'tqdm(loader, **{"disable": not is_main_process(), **options()})' in out
    assert "tqdm(loader, leave=False, disable=not verbose or not is_main_process())" in out
    assert "tqdm(loader, **shown, disable=not is_main_process())" in out
    assert "tqdm(loader, disable=True):" in out
    assert 'tqdm(loader, disable=int(os.environ.get("RANK", 0)) != 0):' in out
    assert out.count("disable") == 6


def test_the_bars_given_disable_through_a_mapping_run(monkeypatch, capsys):
    """The converted bars of SPREAD_BARS run (one process, plain python): no keyword given twice."""
    code = only(NAME, SPREAD_BARS)
    exec(compile(code, "converted.py", "exec"), {"__name__": "converted"})
    assert "got multiple values" not in capsys.readouterr().err


def test_a_counted_bar_given_a_mapping_of_unknown_keys_gets_its_file_as_a_default():
    """COUNTED_BAR's bar made with `**opts` of keys not known: `file=` beside it may be given
    twice; it goes into the mapping, a default its own entry replaces."""
    out = only(NAME, COUNTED_BAR.replace("pbar = tqdm(total=2 * len(loader))",
                                         "pbar = tqdm(total=2 * len(loader), **bar_options())").replace(
        "from tqdm import tqdm\n", "from tqdm import tqdm\n\n\ndef bar_options():\n    return {}\n"))
    assert 'pbar = tqdm(total=2 * len(loader), **{"file": bar_file(), **bar_options()})' in out


def test_a_folder_made_with_a_mapping_tolerates_an_existing_one_in_it():
    """`os.makedirs(path, **opts)` under `if not os.path.exists(path)`: `exist_ok=True` beside a
    mapping that holds `exist_ok` (False here) is given twice; it replaces the mapping's entry. Near
    miss: a mapping holding `exist_ok=True` already tolerates the folder (left)."""
    source = SCRIPT.instead_of("loop").around("""\
import os
opts = {"exist_ok": False}
if not os.path.exists("runs"):
    os.makedirs("runs", **opts)
""")
    out = only(NAME, source)
    assert 'os.makedirs("runs", **{**opts, "exist_ok": True})' in out
    tolerant = only(NAME, source.replace('{"exist_ok": False}', '{"exist_ok": True}'))
    assert 'os.makedirs("runs", **opts)' in tolerant


def test_an_archive_made_of_a_folder_is_made_on_the_main_process_only():
    """disentangling-vae's `create_safe_directory` (25c; decision 0206): an existing results folder
    is archived by `shutil.make_archive(directory, 'zip', directory)`, then removed and made again.
    The removal and the making ran on the main process only, the archive on every process: each
    wrote the same zip, one of them while the main process removed the folder it was reading. Near
    miss: the test and the logger's warning around them still run on every process."""
    out = only(NAME, SCRIPT.instead_of("loop").around("""\
import os
import shutil


def create_safe_directory(directory, logger=None):
    if os.path.exists(directory):
        if logger is not None:
            logger.warning("archiving")
        shutil.make_archive(directory, "zip", directory)
        shutil.rmtree(directory)
    os.makedirs(directory)


create_safe_directory("results")
"""))
    assert "    if os.path.exists(directory):\n        if logger is not None:\n            logger.warning(" \
           "\"archiving\")\n        if is_main_process():\n            shutil.make_archive(directory, \"zip\", " \
           "directory)\n            shutil.rmtree(directory)\n" in out


@pytest.mark.parametrize("imported, made", [
    ("from tqdm.rich import tqdm", "tqdm(total=4)"), ("from tqdm.auto import trange", "trange(4)"),
    ("from tqdm.std import tqdm", "tqdm(total=4)"), ("import tqdm.notebook", "tqdm.notebook.tqdm(total=4)"),
    ("from tqdm import tqdm", "tqdm(total=4)")])
def test_a_bar_of_any_of_tqdms_front_ends_is_shown_on_the_main_process_only(imported, made):
    """midigpt's trainer (25a; decision 0206): `from tqdm.rich import tqdm`, then `with tqdm(total=...)
    as progress_bar:` around the epochs: the bar was drawn on every process, tqdm's own module
    alone being known (and `tqdm.auto`'s and `tqdm.notebook`'s `tqdm`, not their `trange`). The
    front ends take the same `disable=`. Near miss: the plain `tqdm` as before."""
    out = only(NAME, SCRIPT.instead_of("loop").around(f"""\\
{imported}

bar = {made}
for epoch in range(2):
    for x, y in train_loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        bar.update(1)
"""))
    assert f"bar = {made[:-1]}, disable=not is_main_process())" in out


def test_a_file_opened_for_writing_and_handed_straight_to_a_dump_is_written_on_the_main_process_only():
    """xico2001pt/pytorch-project-template (the twenty-sixth sweep's tuning half, decision 0202): its
    Logger's `save_log` runs `yaml.dump(self.log, open(path, "w"))`; a file opened for writing counted
    only as the opener of a `with`, and `yaml.dump` is no write of its own, so every process truncated
    and wrote the run's log (the runtime's self-check: shared-write). A call handed an `open(p, "w")`
    it never names writes that file: the helper is guarded where it is called. Near misses: `json.dump`
    so handed is the write it was (one record), and `yaml.dump(cfg)` into a string writes nothing."""
    out = only(NAME, """\
import json
import torch
import yaml

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(4, 2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()


class Logger:
    def __init__(self):
        self.log = {}

    def save_log(self, path):
        yaml.dump(self.log, open(path, "w"))


logger = Logger()
text = yaml.dump({"a": 1})
json.dump({"a": 1}, open("a.json", "w"))
logger.save_log("log.yaml")
""")
    assert out.endswith('\ntext = yaml.dump({"a": 1})\nif is_main_process():\n    json.dump({"a": 1}, open("a.json", "w"))\n'
                        '    logger.save_log("log.yaml")\n')


def test_an_if_of_writes_inside_another_so_guarded_gets_no_guard_of_its_own():
    """The DCGAN's trainer (25b; decision 0206): `if not os.path.isdir('images/<name>/'):` holding `if not
    os.path.isdir('images/'): os.mkdir('images')` and `os.mkdir('images/<name>/')`. Both tests were
    given `and is_main_process()`, the inner one inside a block only the main process enters. Near
    miss: where the outer `if` also does something else (a print), it runs on every process and the
    inner `if` keeps its guard."""
    body = """\
import os

if not os.path.isdir("images/run/"):
    if not os.path.isdir("images/"):
        os.mkdir("images")
    os.mkdir("images/run/")
"""
    out = only(NAME, SCRIPT.instead_of("loop").around(body))
    assert "if not os.path.isdir(\"images/run/\") and is_main_process():\n" \
           "    if not os.path.isdir(\"images/\"):\n        os.mkdir(\"images\")\n" in out
    near = only(NAME, SCRIPT.instead_of("loop").around(body.replace('    os.mkdir("images/run/")\n',
                                                                    '    print("made")\n')))
    assert "if not os.path.isdir(\"images/run/\"):\n    if not os.path.isdir(\"images/\") and is_main_process():\n" in near


GUARDED_HELPER_CALL = """\
import os
import pickle

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)

    def save_weights(self, folder):
        if folder is None:
            raise ValueError("no folder")
        torch.save(self.state_dict(), os.path.join(folder, "weights.pt"))
        torch.save(self.fc.state_dict(), os.path.join(folder, "head.pt"))

    def save(self, folder):
        os.makedirs(folder, exist_ok=True)
        self.save_weights(folder)
        with open(os.path.join(folder, "params.pkl"), "wb") as f:
            pickle.dump({"width": 4}, f)


class Wide(Net):
    def save_weights(self, folder):
        torch.save(self.state_dict(), os.path.join(folder, "wide.pt"))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in [(torch.randn(4, 4), torch.randn(4, 1))]:
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
model.save("out")
loaded = Net()
loaded.load_state_dict(torch.load(os.path.join("out", "weights.pt")))
"""


def test_no_barrier_in_a_helper_whose_every_call_runs_on_the_main_process_only():
    """Issue 27, round 26's held-out timeVAE (decision 0209): `save()` calls `self.save_weights(d)`,
    which an override that only writes makes a call guarded where it is made (`if is_main_process():
    self.save_weights(d)`); the base's own `save_weights` (a test that raises, then two saves) was
    guarded inside too, with a barrier after its first save, which the file read back later asked
    for: only the main process reached it, and the other left (gloo: "Connection closed by peer").
    The barrier after the guarded call, which every process passes, is the one kept. Near miss:
    without the override the call runs on every process, and the barrier inside stays."""
    out = rewritten(NAME, GUARDED_HELPER_CALL).code
    helper = out[out.index("    def save_weights(self, folder):"):out.index("    def save(self, folder):")]
    assert "barrier()" not in helper
    assert "        if is_main_process():\n            self.save_weights(folder)\n" in out
    assert "                pickle.dump({\"width\": 4}, f)\n        barrier()\n" in out
    plain = GUARDED_HELPER_CALL.replace('class Wide(Net):\n    def save_weights(self, folder):\n'
                                        '        torch.save(self.state_dict(), os.path.join(folder, "wide.pt"))\n', "")
    out = rewritten(NAME, plain).code
    helper = out[out.index("    def save_weights(self, folder):"):out.index("    def save(self, folder):")]
    assert "barrier()" in helper


def test_scipy_io_savemat_of_an_evaluator_is_written_by_the_main_process_only():
    """`savemat(fn + '.mat', {'reward': results})` in a DDPG project's `Evaluator.save_results` was
    written by every process beside its guarded `plt.savefig` (ghliu/pytorch-ddpg, set 28a): scipy.io's
    array writers are file writes; `loadmat` beside it reads and stays as it is."""
    code = """\
import numpy as np
import torch
from scipy.io import loadmat, savemat


class Evaluator:
    def __init__(self, path):
        self.path = path
        self.results = np.zeros((1, 0))

    def save_results(self, fn):
        savemat(fn + '.mat', {'reward': self.results})

    def restore(self, fn):
        return loadmat(fn + '.mat')


model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
evaluate = Evaluator("out")
for step in range(3):
    model(torch.randn(4, 2)).sum().backward()
    opt.step()
evaluate.save_results("out/validate_reward")
"""
    out = only(NAME, code)
    assert "if is_main_process():\n    evaluate.save_results(\"out/validate_reward\")\n" in out
    assert "        return loadmat(fn + '.mat')\n" in out


def test_a_write_called_straight_on_a_file_opened_for_writing_runs_on_the_main_process_only():
    """The NTM trainer's `save_checkpoint` (round 27's held-out repeat-copy task, decision 0231):
    `torch.save(net.state_dict(), model_fname)` was guarded, and `open(train_fname, 'wt').write(
    json.dumps(content))` beside it was not: a file opened for writing counted as the opener of a
    `with`, a handle named and kept, or a file handed to a call, never as the object of its own
    `write` (`ddpify.analysis.writes._written_opener`), so every process wrote the history (the
    self-check: shared-write). Near misses: `open(p).read()` reads, on every process, and a `write`
    of a handle the program names is the opened handle's (guarded as before)."""
    out = only(NAME, """\
import json
import torch

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(4, 2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()


def save_checkpoint(path, losses):
    torch.save(model.state_dict(), path + ".model")
    open(path + ".json", "wt").write(json.dumps(losses))


save_checkpoint("run", [1.0])
text = open("notes.txt").read()
open("log.txt", "a").writelines(["done\\n"])
""")
    assert '\nif is_main_process():\n    save_checkpoint("run", [1.0])\n' in out
    assert '\ntext = open("notes.txt").read()\nif is_main_process():\n    open("log.txt", "a").writelines(["done\\n"])\n' in out


OWN_ROUND_TRIP = """\
import os
import time
import torch


def clone_object(obj):
    filename = f"{time.time_ns()}.tmp"
    torch.save(obj, filename)
    new = torch.load(filename)
    os.remove(filename)
    return new


model = torch.nn.Linear(2, 1)
start = clone_object(model.state_dict())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
model.load_state_dict(start)
"""


@pytest.mark.parametrize("old, new, own", [
    ("", "", True),
    ('f"{time.time_ns()}.tmp"', 'os.path.join(".", f"{time.time_ns()}.tmp")', True),  # a path joined
    # near misses: the path handed back (another function may read the file), the file not removed, or
    # removed before it is read back
    ("    return new\n", "    return new, filename\n", False),
    ("    os.remove(filename)\n", "", False),
    ("    new = torch.load(filename)\n    os.remove(filename)\n", "    os.remove(filename)\n    new = torch.load(filename)\n",
     False),
], ids=["round_trip", "joined", "path_returned", "not_removed", "removed_before_read"])
def test_a_temporary_file_a_function_writes_reads_back_and_removes_stays_on_every_process_under_its_own_name(old, new, own):
    """PointNet's `clone_object` (28c): `filename = f'{get_timestamp()}.tmp'`, `torch.save(obj,
    filename)`, `new = torch.load(filename)`, `os.remove(filename)`, a copy through the disk. The
    save and the removal ran on the main process only: every process loaded the main process's
    object, and the main process removed the file while another had still to read it
    (FileNotFoundError, not named). Now each process writes, reads and removes a file of its own,
    its rank added to the name, and a warning at the save says so (the sweep's judge counts any save
    on rank 1). Near misses: where the path is returned (another function may read the file), the
    file is not removed, or is removed before it is read, the writes stay on the main process only,
    as before."""
    code = OWN_ROUND_TRIP.replace(old, new) if old else OWN_ROUND_TRIP
    code = code.replace("start = clone", "start, _ = clone") if "filename\n" in new else code
    result = rewritten(NAME, code)
    out = result.code
    bound = new if new.startswith("os.path") else 'f"{time.time_ns()}.tmp"'
    assert any("every process writes its own copy of this temporary file" in w for w in warnings(result.changes)) is own
    mine = (f'    filename = {bound}\n    filename = f"{{filename}}.{{get_rank()}}"\n'
            "    torch.save(obj, filename)\n    new = torch.load(filename)\n    os.remove(filename)\n")
    assert (mine in out) is own, out
    assert ("is_main_process()" not in out) is own, out


# an RL course's Dueling DQN (round 30's tuning half, decision 0246): the agent's `save` writes the target
# network's weights; the script builds a second agent through the same helper and loads them back
AGENT_ROUND_TRIP = """\
import torch
import torch.nn as nn


class Agent:
    def __init__(self):
        self.net = nn.Linear(2, 2)
        self.opt = torch.optim.Adam(self.net.parameters())

    def train(self):
        for i in range(3):
            loss = self.net(torch.randn(4, 2)).sum()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()

    def save(self, path):
        torch.save(self.net.state_dict(), path + "ckpt.pth")

    def load(self, path):
        self.net.load_state_dict(torch.load(path + "ckpt.pth"))


def make(cfg):
    env = cfg
    agent = Agent()
    return env, agent


if __name__ == "__main__":
    env, agent = make(0)
    agent.train()
    agent.save("./")
    env, agent = make(0)
{reload}
"""


def test_a_checkpoint_saved_by_an_agent_unpacked_from_a_helper_and_loaded_by_another_gets_a_barrier():
    """`env, agent = make(cfg)` twice, `agent.save(path)` then `agent.load(path)`: before, the agent
    unpacked from the helper's tuple was of no class, the save was guarded inside `save` with no
    barrier, and a process that got there first could load a file the main process had not written."""
    converted = only(NAME, AGENT_ROUND_TRIP.format(reload='    agent.load("./")'))
    assert "barrier()" in converted


def test_an_agent_whose_saved_checkpoint_is_never_read_back_gets_no_barrier():
    """The near miss: nothing loads the file back; nothing waits."""
    converted = only(NAME, AGENT_ROUND_TRIP.format(reload="    print(env)"))
    assert "barrier()" not in converted


def test_tensorboard_loggers_module_level_configure_and_log_value_run_on_the_main_process_only():
    """tensorboard_logger's module-level writer (deep mutual learning, decision 0257): `configure(logdir)`
    opens an event file and `log_value` writes to it; every process did both into the same folder. Both now
    run on the main process only; near miss: a function of another name from the same import
    (`tensorboard_logger.unconfigure`, which writes nothing) stays on every process."""
    code = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tensorboard_logger import configure, log_value, unconfigure

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4, shuffle=True)
configure("runs/dml")
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        log_value("loss", loss.item(), epoch)
unconfigure()
"""
    out = only(NAME, code)
    assert 'if is_main_process():\n    configure("runs/dml")\n' in out
    assert '        if is_main_process():\n            log_value("loss", loss.item(), epoch)\n' in out
    assert "\nunconfigure()\n" in out


HELD_CLASS_GETS_THE_WRITER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter


class Evaluator:
    def __init__(self, visualizer):
        self.visualizer = visualizer
        self.results = []

    def update(self, out):
        self.results.append(out.mean().item())

    def compute(self, epoch):
        self.visualizer.add_scalar("mean", sum(self.results), epoch)
        self.results.clear()


class Trainer:
    def __init__(self):
        self.evaluator = self._build_evaluator()
        self.visualizer = SummaryWriter("runs")

    def _build_evaluator(self):
        return Evaluator

    def train(self):
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4, shuffle=True)
        self.evaluator = self.evaluator(self.visualizer)
        for epoch in range(2):
            for (x,) in loader:
                out = model(x)
                optimizer.zero_grad()
                out.sum().backward()
                optimizer.step()
                self.evaluator.update(out)
            self.visualizer.add_scalar("epoch", epoch, epoch)
            self.evaluator.compute(epoch)


Trainer().train()
"""


def test_a_writer_handed_to_a_class_an_attribute_holds_is_followed_into_it():
    """Round 31's held-out modular framework (31a; decision 0264): `self.evaluator` holds the class a
    builder method returns (`return Evaluator`) and is then rebound to what calling it builds,
    `self.evaluator = self.evaluator(self.visualizer)`. That call ran nothing of the program, so the
    SummaryWriter (None off the main process) was not followed into the evaluator's
    `self.visualizer`: its `add_scalar` stayed on every process and rank 1 crashed on None. The
    call runs the held class's `__init__`: the writer's use there is guarded. Near miss: the
    evaluator's own bookkeeping (`self.results.clear()`) stays on every process."""
    out = only(NAME, HELD_CLASS_GETS_THE_WRITER)
    assert "        if is_main_process():\n            self.visualizer.add_scalar(\"mean\", sum(self.results), epoch)\n" \
        "        self.results.clear()\n" in out
    assert "        self.evaluator = self.evaluator(self.visualizer)\n" in out


def test_an_attribute_also_set_to_something_not_a_class_names_no_class():
    """Near miss of the above: where some assignment of `self.evaluator` is not a class of the
    program (a function of a library), the attribute's call is not taken for the class's
    `__init__`; the writer's use there is not followed (as before)."""
    src = HELD_CLASS_GETS_THE_WRITER.replace("        self.evaluator = self._build_evaluator()\n",
                                             "        self.evaluator = self._build_evaluator() if torch.cuda.is_available() "
                                             "else torch.nn.Identity\n")
    out = only(NAME, src)
    assert "        self.visualizer.add_scalar(\"mean\", sum(self.results), epoch)\n        self.results.clear()\n" in out


CONVERTED_IMAGE_COPIED = """\
import io
import os
import torch
from PIL import Image
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, val_dir, out_dir):
        self.val_dir = val_dir
        self.out_dir = out_dir

    def setup_datasets(self):
        self.fid_dir = f"{self.out_dir}/val_fid"
        os.makedirs(self.fid_dir, exist_ok=True)
        for root, _, fnames in sorted(os.walk(self.val_dir)):
            for fname in fnames:
                path = os.path.join(root, fname)
                image = Image.open(path).convert("RGB")
                image.save(f"{self.fid_dir}/{fname}")
                buffer = io.BytesIO()
                Image.open(path).convert("L").save(buffer, format="PNG")

    def train(self):
        self.setup_datasets()
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4, shuffle=True)
        for epoch in range(2):
            for (x,) in loader:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()


Trainer("val", "exp").train()
"""


def test_a_pil_image_made_through_its_own_methods_saves_a_file():
    """Round 31's held-out diffusion template (31a; decision 0264): `image = Image.open(path).convert(
    "RGB")` then `image.save(...)` (the validation images copied for FID) was no write, as the
    image's maker is `.convert(...)` of a call and not `Image.open` itself: every process wrote every
    file, and nothing named it. A PIL image's methods that return a new image are followed to
    their image. Near miss: the same image saved into an in-memory buffer stays on every process."""
    out = only(NAME, CONVERTED_IMAGE_COPIED)
    assert "                if is_main_process():\n                    image.save(f\"{self.fid_dir}/{fname}\")\n" in out
    assert "                Image.open(path).convert(\"L\").save(buffer, format=\"PNG\")\n" in out
    assert "is_main_process():\n                    Image.open" not in out


TRIES_WRITERS = SCRIPT.instead_of("loop").around('''\
import importlib


class TensorboardWriter:
    def __init__(self, log_dir):
        self.writer = None
        for module in ["torch.utils.tensorboard", "tensorboardX"]:
            try:
                self.writer = importlib.import_module(module).SummaryWriter(log_dir)
                break
            except ImportError:
                pass

    def __getattr__(self, name):
        add_data = getattr(self.writer, name, None)

        def wrapper(tag, data, step):
            if add_data is not None:
                add_data(tag, data, step)
        return wrapper


class MetricTracker:
    def __init__(self, *keys, writer=None):
        self.writer = writer
        self.totals = {k: 0.0 for k in keys}
        self.counts = {k: 0 for k in keys}

    def update(self, key, value, step):
        self.totals[key] += value
        self.counts[key] += 1
        if self.writer:
            self.writer.add_scalar(key, value, step)

    def result(self):
        return {k: self.totals[k] / max(self.counts[k], 1) for k in self.totals}


writer = TensorboardWriter("runs")
metrics = MetricTracker("loss", writer=writer)
for epoch in range(2):
    for step, (x, y) in enumerate(train_loader):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        metrics.update("loss", loss.item(), step)
    log = metrics.result()
    print(epoch, log["loss"])
''')


def test_a_writer_read_off_a_module_a_loop_tries_by_name_is_made_on_the_main_process_only():
    """pytorch-template's TensorboardWriter makes its SummaryWriter as `importlib.import_module(module)
    .SummaryWriter(log_dir)` in a loop over `["torch.utils.tensorboard", "tensorboardX"]` that breaks at
    the first that imports: the name read off the module is the first named (`Facts.qualify`), a
    SummaryWriter, made on the main process only, None elsewhere, and the class holding it is a logger
    (32c's capsule network wrote its events on every process, named only by the report's "loads code by
    name"; decision 0268). Its MetricTracker holds the writer too, but keeps figures the program reads
    back (`result()` returns the averages it adds up): it is made on every process and its updates and
    results stay there; only the writer's call in it runs on the main process."""
    result = rewritten(NAME, TRIES_WRITERS)
    out = result.code
    assert ".SummaryWriter(log_dir) if is_main_process() else None" in out
    assert 'writer = TensorboardWriter("runs") if is_main_process() else None' in out
    assert 'metrics = MetricTracker("loss", writer=writer)\n' in out
    assert '        metrics.update("loss", loss.item(), step)\n' in out
    assert "    log = metrics.result()\n" in out
    assert "if self.writer and is_main_process():\n            self.writer.add_scalar(key, value, step)" in out
    assert not any("loads code by name" in w for w in warnings(result.changes))


def test_a_module_named_at_run_time_or_looped_over_without_a_break_names_no_writer():
    """Near misses: `importlib.import_module(args_module)` (a name given at run time) and a loop over
    module names with no `break` (it loads each, not the first that imports) tell no class: the
    SummaryWriter is not taken for one, and the report still says that code is loaded by name."""
    runtime = TRIES_WRITERS.replace('for module in ["torch.utils.tensorboard", "tensorboardX"]:',
                                    'for module in [os.environ["WRITER_MODULE"]]:')
    result = rewritten(NAME, runtime)
    assert ".SummaryWriter(log_dir)\n" in result.code and "SummaryWriter(log_dir) if" not in result.code
    no_break = TRIES_WRITERS.replace("                break\n", "")
    assert "SummaryWriter(log_dir) if" not in only(NAME, no_break)


def test_a_logger_class_whose_method_returns_what_its_init_set_is_a_logger_still():
    """Near miss of the metric tracker: a Logger holding a SummaryWriter whose `get_log_dir()` returns the
    folder `__init__` set (no figure it adds up) is a logger: made on the main process only."""
    out = only(NAME, SCRIPT.instead_of("loop").around('''\
from torch.utils.tensorboard import SummaryWriter


class Logger:
    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.writer = SummaryWriter(log_dir)

    def scalar(self, tag, value, step):
        self.writer.add_scalar(tag, value, step)

    def get_log_dir(self):
        return self.log_dir


logger = Logger("runs")
for epoch in range(2):
    for step, (x, y) in enumerate(train_loader):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        logger.scalar("loss", loss.item(), step)
'''))
    assert 'logger = Logger("runs") if is_main_process() else None' in out
    assert 'if is_main_process():\n            logger.scalar("loss", loss.item(), step)' in out
