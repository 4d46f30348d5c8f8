"""A stand-in for torchvision (it does not import on this machine, and data sets are downloads):
small synthetic data sets, the transforms the sweep's programs use, and image writers that
record a write (``sitecustomize.record_write``) and write a few bytes. Deterministic: every
process of a job sees the same data. ``FRESH_SWEEP_SAMPLES`` (default 256) sizes a training
split; a test split is a quarter of it."""

from . import datasets, models, transforms, utils  # noqa: F401

__version__ = "0.0+fresh.sweep.stub"  # a version packaging.version parses (PEP 440 local label)
