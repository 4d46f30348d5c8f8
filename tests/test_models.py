"""Which models are wrapped where, and what each later use of a wrapped name sees.

The classes found on public scripts (issues 9 and 15): a model that arrives as a function
argument, heads that a step leaves unused, names rebound after the wrap, checkpoints of a
DataParallel script, training that no DataLoader feeds.
"""

from __future__ import annotations

import textwrap

from ddpify.convert import Options, convert
from ddpify.report import WARNING

HEADER = """
import torch
from torch.utils.data import DataLoader, TensorDataset
ds = TensorDataset(torch.randn(8, 2), torch.randn(8, 1))
loader = DataLoader(ds, batch_size=4, shuffle=True)
"""

NET = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)
        self.size = 1

    def forward(self, x):
        return self.fc(x)
"""

STEP = """
    for x, y in loader:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
"""


def run(code: str, header: str = HEADER, **options):
    result = convert(textwrap.dedent(header + code), Options(**options))
    compile(result.code, "<converted>", "exec")
    return result.code, result.changes


def lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines()]


def warnings(changes) -> list[str]:
    return [c.message for c in changes if c.kind == WARNING]


# --- a model that arrives as a function argument ------------------------------------------------

FIT = """
def fit(model, loader, epochs):
    \"\"\"Train `model` in place.\"\"\"
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
""" + textwrap.indent(STEP, "    ")


def test_a_model_received_by_the_training_function_is_wrapped_on_entry():
    code, changes = run(NET + FIT + """
teacher = Net()
fit(teacher, loader, 2)
student = Net()
fit(student, loader, 2)
print(teacher.size, student.size)
""")
    body = lines(code)
    start = body.index('"""Train `model` in place."""')
    assert body[start + 1] == "model = DistributedDataParallel(model, device_ids=device_ids(model))"
    assert body.count("model = DistributedDataParallel(model, device_ids=device_ids(model))") == 1
    assert "print(teacher.size, student.size)" in body, "the callers keep their bare models"
    assert "loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds, shuffle=True))" in body
    assert not any("could not tell" in w or "no optimizer trains" in w for w in warnings(changes))
    assert any("where fit() receives it (the caller keeps the bare model)" in c.message for c in changes)


def test_the_wrap_on_entry_follows_the_set_up_and_leaves_an_evaluated_model_alone():
    code, _ = run(NET + """
def distill(teacher, student, loader, device):
    teacher.eval()
    student.to(device)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    for x, y in loader:
        with torch.no_grad():
            target = teacher(x)
        optimizer.zero_grad()
        ((student(x) - target) ** 2).mean().backward()
        optimizer.step()
    return student.size

distill(Net(), Net(), loader, "cpu")
""")
    body = lines(code)
    assert body[body.index("student.to(device)") + 1] == \
        "student = DistributedDataParallel(student, device_ids=device_ids(student))"
    assert "teacher = DistributedDataParallel" not in code
    assert "return student.module.size" in body


def test_a_model_rebound_before_the_optimizer_is_not_the_argument():
    code, _ = run(NET + """
def fit(model, loader):
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
""" + STEP + "\nfit(None, loader)\n")
    body = lines(code)
    assert body[body.index("model = Net()") + 1] == \
        "model = DistributedDataParallel(model, device_ids=device_ids(model))"


# --- outputs a step leaves unread ---------------------------------------------------------------

HEADS = """
class Heads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Linear(2, 4)
        self.adv = torch.nn.Linear(4, 1)
        self.cls = torch.nn.Linear(4, 3)

    def forward(self, x):
        h = self.trunk(x)
        return self.adv(h), self.cls(h)

model = Heads()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        {step}
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
WRAP = "model = DistributedDataParallel(model, device_ids=device_ids(model){})"


def test_a_head_left_unread_builds_ddp_that_finds_unused_parameters():
    for step in ("validity, _ = model(x)\n        loss = validity.mean()",
                 "validity, logits = model(x)\n        loss = validity.mean()",
                 "loss = model(x)[0].mean()"):
        code, changes = run(HEADS.format(step=step))
        assert WRAP.format(", find_unused_parameters=True") in code, step
        assert any("leaves outputs of `model` unread" in w for w in warnings(changes)), step


def test_every_head_read_or_only_evaluated_keeps_the_default():
    for step in ("validity, logits = model(x)\n        loss = validity.mean() + logits.mean()",
                 "with torch.no_grad():\n            _, logits = model(x)\n        loss = logits.mean()"):
        code, changes = run(HEADS.format(step=step))
        assert WRAP.format("") in code, step
        assert not any("unread" in w for w in warnings(changes)), step


def test_a_discarded_hidden_state_is_no_head():
    code, _ = run("""
class RNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(2, 4)
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x, state=None):
        out, state = self.rnn(x, state)
        return self.head(out), state

model = RNN()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        out, _ = model(x)
        optimizer.zero_grad()
        out.mean().backward()
        optimizer.step()
""")
    assert WRAP.format("") in code


# --- names rebound after the wrap ---------------------------------------------------------------

TRAIN = NET + """
def generate(net):
    return net.size

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
""" + STEP


def test_a_proven_wrapper_goes_through_module():
    code, _ = run(TRAIN + "    print(generate(model), model.size)\ntorch.save(model, 'm.pt')\n")
    assert "return net.module.size" in code
    assert "print(generate(model), model.module.size)" in code
    assert "torch.save(model.module, 'm.pt')" in code
    assert "unwrap" not in code


def test_a_name_that_may_hold_the_bare_model_goes_through_unwrap():
    code, _ = run(TRAIN + """
    print(generate(model))
    if epoch == 1:
        model = torch.load("best.pt")
    print(model.size)
model = model.module
print(model.size)
print(generate(Net()))
""")
    body = lines(code)
    assert body.count("print(unwrap(model).size)") == 2, "rebound on some paths, and to .module"
    assert "return unwrap(net).size" in body, "some callers pass a bare model"
    assert "from ddpify_runtime import" in code and "unwrap" in code.split("\n", 4)[3]


def test_a_name_rebound_to_a_fresh_model_is_left_as_it_is():
    code, _ = run(TRAIN + "model = torch.load('best.pt')\nprint(model.size)\n")
    assert "print(model.size)" in lines(code)


def test_a_function_that_returns_the_model_it_trains_keeps_the_wrapper():
    code, _ = run(NET + """
def train(model):
    for x, y in loader:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
    return model

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model = train(model)
print(model.size)
""")
    assert "print(model.module.size)" in code


# --- DataParallel checkpoints, training without a loader ----------------------------------------

def test_a_dataparallel_script_loads_old_checkpoints_without_module_prefix():
    code, _ = run(NET + """
model = torch.nn.DataParallel(Net())
model.load_state_dict(torch.load("old.pt"))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
""" + STEP)
    assert 'model.load_state_dict(without_module_prefix(torch.load("old.pt", map_location=local_device())))' in code


def test_training_without_a_dataloader_says_what_each_process_trains_on():
    code, changes = run("""
policy = torch.nn.Linear(4, 2)
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
for episode in range(100):
    loss = policy(torch.randn(32, 4)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""", header="import torch\n")
    assert any("no DataLoader feeds this training" in w for w in warnings(changes))
    todo = next(i for i, line in enumerate(lines(code)) if "no DataLoader feeds" in line)
    assert lines(code)[todo + 1] == "for episode in range(100):"
