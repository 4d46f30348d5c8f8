"""The one reader of what the probe (``probe/sitecustomize.py``) recorded.

``Probe.read(DIR)`` reads the events of ``DDPIFY_PROBE_DIR=DIR`` (the launchers' own files are
skipped: torchrun's and torch.distributed.launch's processes import torch too);
``read_bench(DIR, world)`` reads the per-rank files of ``DDPIFY_BENCH_PROBE=DIR``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

LAUNCHERS = ("torch.distributed.run", "torch.distributed.launch")


def _is_launcher(events: List[dict]) -> bool:
    """A launcher's process: ``python -m torch.distributed.run|launch`` or ``torchrun``."""
    return any(any(name in arg for name in LAUNCHERS) or arg.endswith("torchrun")
               for e in events if e["ev"] == "start" for arg in e["argv"])


@dataclass
class Pass:
    """One iteration over one DataLoader on one rank."""

    rank: int
    loader: int
    number: int
    info: dict  # the probe's "pass" event: sampler type, shuffle, expected count, ...
    indices: List = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.info.get("expected") is not None and len(self.indices) == self.info["expected"]


@dataclass
class Probe:
    """All events of one launch, from the worker processes (or the plain-python process)."""

    events: List[dict]

    @classmethod
    def read(cls, probe_dir: Path) -> "Probe":
        events = []
        for path in sorted(probe_dir.glob("*.jsonl")) if probe_dir.is_dir() else []:
            file_events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            if not _is_launcher(file_events):
                events.extend(file_events)
        return cls(events)

    def of(self, ev: str, rank: Optional[int] = None) -> List[dict]:
        return [e for e in self.events if e["ev"] == ev and (rank is None or e["rank"] == rank)]

    # ---- processes

    @property
    def ranks(self) -> List[int]:
        return sorted({e["rank"] for e in self.of("start")})

    def exited(self) -> Counter:
        return Counter(e["rank"] for e in self.of("exit"))

    def init(self) -> Dict[int, dict]:
        """rank -> its ``init`` event (fails if two processes claim one rank)."""
        by_rank: Dict[int, dict] = {}
        for e in self.of("init"):
            assert e["rank"] not in by_rank, f"two processes joined as rank {e['rank']}"
            by_rank[e["rank"]] = e
        return by_rank

    # ---- loaders

    def passes(self) -> Dict[Tuple[int, int], List[Pass]]:
        """(rank, loader) -> that rank's passes over that loader, in order."""
        by_key: Dict[Tuple[int, int, int], Pass] = {}
        for e in self.events:
            if e["ev"] == "pass":
                by_key[(e["rank"], e["loader"], e["pass"])] = Pass(e["rank"], e["loader"], e["pass"], e)
            elif e["ev"] == "fetch" and e["loader"] is not None:
                by_key[(e["rank"], e["loader"], e["pass"])].indices.extend(e["idx"])
        result: Dict[Tuple[int, int], List[Pass]] = defaultdict(list)
        for (rank, loader, _), p in sorted(by_key.items()):
            result[(rank, loader)].append(p)
        return dict(result)

    def loaders(self) -> Dict[int, dict]:
        """loader number -> its first pass event (on the lowest rank)."""
        first = {}
        for e in sorted(self.of("pass"), key=lambda e: (e["rank"], e["pass"])):
            first.setdefault(e["loader"], e)
        return first

    def first_loader(self) -> Optional[int]:
        """The first-created loader that fetched anything: the training loader of the small
        fixtures (``shard_loader`` rebuilds a loader, so the original, never iterated, is skipped)."""
        return min((e["loader"] for e in self.of("fetch") if e["loader"] is not None), default=None)

    def indices(self, loader: Optional[int] = None) -> Dict[int, List[List[int]]]:
        """rank -> the indices fetched in each pass over ``loader`` (default: ``first_loader()``)."""
        loader = self.first_loader() if loader is None else loader
        by_rank: Dict[int, Dict[int, List[int]]] = defaultdict(lambda: defaultdict(list))
        for e in self.of("fetch"):
            if e["loader"] == loader:
                by_rank[e["rank"]][e["pass"]].extend(e["idx"])
        return {r: [p[k] for k in sorted(p)] for r, p in sorted(by_rank.items())}

    def batches(self, loader: Optional[int] = None) -> Dict[int, List[int]]:
        """rank -> the number of batches fetched in each pass over ``loader`` (as ``indices``)."""
        loader = self.first_loader() if loader is None else loader
        by_rank: Dict[int, Dict[int, int]] = defaultdict(lambda: defaultdict(int))
        for e in self.of("fetch"):
            if e["loader"] == loader:
                by_rank[e["rank"]][e["pass"]] += 1
        return {r: [p[k] for k in sorted(p)] for r, p in sorted(by_rank.items())}

    # ---- models and files

    def params(self) -> Dict[int, Dict[int, dict]]:
        """model number (DDP construction order) -> rank -> "params" event."""
        result: Dict[int, Dict[int, dict]] = defaultdict(dict)
        for e in self.of("params"):
            result[e["model"]][e["rank"]] = e
        return dict(result)

    def optimizers(self, when: str) -> Dict[int, Dict[int, dict]]:
        """optimizer number (creation order) -> rank -> its "optimizer" event at ``when``
        ("step2": after its 2nd step, "exit")."""
        result: Dict[int, Dict[int, dict]] = defaultdict(dict)
        for e in self.of("optimizer"):
            if e["when"] == when:
                result[e["model"]][e["rank"]] = e
        return dict(result)

    def saves(self, rank: Optional[int] = None) -> List[dict]:
        return self.of("save", rank)

    def saved_paths(self) -> Dict[int, List[str]]:
        """rank -> the absolute paths it saved to, in order."""
        by_rank: Dict[int, List[str]] = defaultdict(list)
        for e in self.saves():
            by_rank[e["rank"]].append(e["abspath"])
        return dict(by_rank)


def read_bench(probe_dir: Path, world: int) -> List[dict]:
    """Per rank, what ``DDPIFY_BENCH_PROBE`` recorded: ``steps`` and ``cpu`` (perf_counter and
    process_time after each optimizer step), ``events`` ([collective, steps done])."""
    return [json.loads((probe_dir / f"rank{rank}.json").read_text()) for rank in range(world)]
