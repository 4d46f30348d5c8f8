"""Where the storages of a file `torch.save` wrote were saved (`ddpify.analysis.tensor_files`),
read from its pickle's opcodes, in both of torch's formats; DDP014 leaves a load of a project file
saved on the CPU alone (the fixtures `DDP014/*_tensor_file_beside_the_script` run the rule)."""

import torch
import torch.serialization

from ddpify.analysis.tensor_files import storage_devices


def _saved(path, obj, monkeypatch, device="cpu", zipped=True):
    with monkeypatch.context() as m:
        if device != "cpu":  # a GPU's tag, as `torch.save` writes it for a CUDA storage
            m.setattr(torch.serialization, "location_tag", lambda storage: device)
        torch.save(obj, path, _use_new_zipfile_serialization=zipped)
    return path


def test_cpu_storages_in_both_formats(tmp_path, monkeypatch):
    obj = {"mean": torch.zeros(3), "std": torch.ones(3), "more": [torch.zeros(1)]}
    assert storage_devices(_saved(tmp_path / "new.pt", obj, monkeypatch)) == {"cpu"}
    assert storage_devices(_saved(tmp_path / "old.pt", obj, monkeypatch, zipped=False)) == {"cpu"}


def test_gpu_storages_in_both_formats(tmp_path, monkeypatch):
    obj = {"mean": torch.zeros(3), "std": torch.ones(3)}
    assert storage_devices(_saved(tmp_path / "new.pt", obj, monkeypatch, "cuda:0")) == {"cuda:0"}
    assert storage_devices(_saved(tmp_path / "old.pt", obj, monkeypatch, "cuda:0", zipped=False)) == {"cuda:0"}


def test_no_tensor_and_not_a_tensor_file(tmp_path, monkeypatch):
    assert storage_devices(_saved(tmp_path / "ints.pt", {"global_step": 3}, monkeypatch)) == set()
    (tmp_path / "notes.pt").write_text("not a pickle")
    assert storage_devices(tmp_path / "notes.pt") is None
    assert storage_devices(tmp_path / "missing.pt") is None
