"""fixtures/canonical/before.py made distributed BY HAND: the baseline of bench axis 5.

What a careful engineer writes with plain torch.distributed, for the same model, data, steps
and evaluation as ddpify's conversion (fixtures/canonical/after.py):
init_process_group from torchrun's environment (gloo on CPU, nccl + the LOCAL_RANK GPU on
CUDA), a DistributedSampler for the training set and set_epoch() every epoch, the model in
DistributedDataParallel, the whole test set evaluated on every rank, printing and saving on
rank 0 only (model.module's weights, so the keys match the single-GPU script), and
destroy_process_group() at the end. No barrier: nothing here needs one.

    torchrun --standalone --nproc_per_node=2 bench/handwritten_ddp.py --epochs 3

`--log-dir` is a data-access audit: the training set appends every index it serves to
`served-<pid>.jsonl` in that folder (one file per process, in the order served).
"""
import argparse
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SyntheticPoints(Dataset):
    """Four Gaussian blobs in 2-D, one per class."""

    def __init__(self, num_samples, seed, log_dir=None):
        g = torch.Generator().manual_seed(seed)
        centers = torch.tensor([[2.0, 2.0], [-2.0, 2.0], [-2.0, -2.0], [2.0, -2.0]])
        self.targets = torch.randint(0, len(centers), (num_samples,), generator=g)
        self.points = centers[self.targets] + torch.randn(num_samples, 2, generator=g)
        self.log_dir = log_dir
        self._log = None  # opened lazily, in the process that reads the data

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, idx):
        if self.log_dir is not None:
            if self._log is None:
                path = os.path.join(self.log_dir, f"served-{os.getpid()}.jsonl")
                self._log = open(path, "a", buffering=1)
            self._log.write(json.dumps({"idx": int(idx)}) + "\n")
        return self.points[idx], self.targets[idx]


class Net(nn.Module):
    def __init__(self, hidden=32, num_classes=4):
        super().__init__()
        self.fc1 = nn.Linear(2, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    total_loss = 0.0
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    if dist.get_rank() == 0:
        print(f"epoch {epoch}: train loss {total_loss / len(train_loader):.4f}")


def test(model, device, test_loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            # sum up batch loss
            test_loss += F.cross_entropy(output, target, reduction="sum").item()
            correct += (output.argmax(dim=1) == target).sum().item()
    test_loss /= len(test_loader.dataset)
    if dist.get_rank() == 0:
        print(f"test: average loss {test_loss:.4f}, accuracy {correct}/{len(test_loader.dataset)}")


def main():
    parser = argparse.ArgumentParser(description="canonical single-GPU training script")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--num-train", type=int, default=96)
    parser.add_argument("--num-test", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=str, default="canonical_mlp.pt",
                        help="where to save the trained weights")
    parser.add_argument("--log-dir", type=str, default=None,
                        help="folder for the training set's data-access audit")
    args = parser.parse_args()

    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if use_cuda:
        torch.cuda.set_device(local_rank)
    torch.manual_seed(args.seed)
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")

    train_set = SyntheticPoints(args.num_train, seed=args.seed, log_dir=args.log_dir)
    test_set = SyntheticPoints(args.num_test, seed=args.seed + 1)
    train_sampler = DistributedSampler(train_set, shuffle=True)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    test_loader = DataLoader(test_set, batch_size=32, shuffle=False)

    model = DDP(Net().to(device), device_ids=[local_rank] if use_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for epoch in range(1, args.epochs + 1):
        train_sampler.set_epoch(epoch)
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)

    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), args.out)
        print(f"saved {args.out}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
