"""The Python conventions of the module: exceptions that pickle, arguments validated in
Python with errors that name them (and never print the environment), check ids that
`only=` takes, PEP 8 names with the old ones kept, an overview in help(), and a
measure() that leaves every random state as it found it."""
from __future__ import annotations

import concurrent.futures
import copy
import multiprocessing
import pickle
import pydoc
import random

import pytest

from conftest import needs_torch

import headroom
from headroom.report import Evidence, Finding, Report


def _critical_report() -> Report:
    finding = Finding(id="shm.capacity", subject="/dev/shm", severity="critical",
                      summary="too small", evidence=[Evidence("avail_bytes", 1, "bytes", "1 B")],
                      remedy=["docker run --shm-size=1g ..."])
    return Report(verdict="critical", environment="docker", findings=[finding])


def raise_disk_full(_: int) -> None:
    raise headroom.DiskFullError("/ckpt/step_2.pt", 10 << 20, 3 << 20, "no room", ("/ckpt/a",))


def raise_critical(_: int) -> None:
    _critical_report().raise_for_critical()


@pytest.mark.parametrize("clone", [lambda e: pickle.loads(pickle.dumps(e)), copy.copy,
                                   copy.deepcopy])
def test_exceptions_survive_pickle_and_copy(clone):
    with pytest.raises(headroom.DiskFullError) as raised:
        raise_disk_full(0)
    disk = clone(raised.value)
    assert type(disk) is headroom.DiskFullError and disk.errno == 28
    assert (disk.filename, disk.needed_bytes, disk.avail_bytes, disk.removed) == (
        "/ckpt/step_2.pt", 10 << 20, 3 << 20, ("/ckpt/a",))
    assert str(disk) == str(raised.value)
    with pytest.raises(headroom.CriticalFindingError) as raised_critical:
        raise_critical(0)
    critical = clone(raised_critical.value)
    assert str(critical) == str(raised_critical.value)
    assert critical.findings[0].id == "shm.capacity" and critical.report.verdict == "critical"


@pytest.mark.parametrize("function, exception", [(raise_disk_full, headroom.DiskFullError),
                                                 (raise_critical, headroom.CriticalFindingError)])
def test_exceptions_come_back_from_worker_processes(function, exception):
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        with pytest.raises(exception) as raised:
            pool.submit(function, 0).result(timeout=60)
    assert "no room" in str(raised.value) or "shm.capacity" in str(raised.value)
    with multiprocessing.Pool(1) as pool:
        with pytest.raises(exception):
            pool.apply_async(function, (0,)).get(timeout=60)


def test_old_names_are_the_same_classes():
    assert headroom.DiskFull is headroom.DiskFullError
    assert headroom.CriticalFinding is headroom.CriticalFindingError
    assert headroom.DiskFullError.__module__ == "headroom"


SECRET = "s3cr3t-token-value"


@pytest.mark.parametrize("kwargs, name", [
    ({"keep": -3}, "keep"), ({"keep": 1.5}, "keep"), ({"interval": 0}, "interval"),
    ({"interval": "fast"}, "interval"), ({"window": -1}, "window"),
    ({"eta_horizon": float("nan")}, "eta_horizon"), ({"warn_percent": 150}, "warn_percent"),
    ({"warn_percent": 99, "critical_percent": 90}, "warn_percent"),
    ({"ckpt_bytes": "lots"}, "ckpt_bytes"), ({"ckpt_bytes": -1}, "ckpt_bytes"),
    ({"clear_samples": 0}, "clear_samples"), ({"on_alert": "print"}, "on_alert"),
    ({"shm": "yes"}, "shm"), ({"environment": {"TOKEN": 5}}, "environment"),
])
def test_monitor_arguments_are_checked_in_python(scratch, monkeypatch, kwargs, name):
    monkeypatch.setenv("HEADROOM_TEST_TOKEN", SECRET)
    kwargs = dict(kwargs)
    if "environment" not in kwargs:
        kwargs["environment"] = {"TOKEN": SECRET}
    with pytest.raises((ValueError, TypeError)) as raised:
        headroom.Monitor(scratch, **kwargs)
    message = str(raised.value)
    assert name in message, message
    assert SECRET not in message and "--" not in message, message


@pytest.mark.parametrize("kwargs, name", [
    ({"workers": -1}, "workers"), ({"ranks": 0}, "ranks"), ({"keep": 0}, "keep"),
    ({"only": "nope"}, "only"), ({"only": 3}, "only"), ({"warn_percent": 0}, "warn_percent"),
    ({"batch_bytes": "12XB"}, "batch_bytes"), ({"workers": 2, "prefetch": 0}, "prefetch"),
    ({"environment": ["TOKEN"]}, "environment"), ({"dirs": 5}, "dirs"),
])
def test_check_arguments_name_the_argument_not_a_flag(scratch, monkeypatch, kwargs, name):
    monkeypatch.setenv("HEADROOM_TEST_TOKEN", SECRET)
    with pytest.raises((ValueError, TypeError)) as raised:
        headroom.check(scratch, **kwargs)
    message = str(raised.value)
    assert name in message and "--" not in message and SECRET not in message, message


def test_checks_lists_every_id_a_report_prints_and_only_takes_each(scratch):
    report = headroom.check(scratch)
    printed = {finding.id for finding in report.findings}
    assert printed <= set(headroom.CHECKS), printed - set(headroom.CHECKS)
    for finding_id in ("fd.system", "tmp.exec", "memory.commit", "shm.stale"):
        assert finding_id in headroom.CHECKS
        only = headroom.check(scratch, only=finding_id)
        assert [finding.id for finding in only.findings] == [finding_id], only.findings
    # A prefix still selects the group.
    assert {f.id for f in headroom.check(scratch, only="tmp").findings} == {
        "tmp.space", "tmp.socket", "tmp.exec"}


def test_help_opens_with_an_overview():
    text = pydoc.render_doc(headroom, renderer=pydoc.plaintext)
    head = "\n".join(text.splitlines()[:40])
    for word in ("save_checkpoint", "Monitor", "preflight", "monitor.ok", "check("):
        assert word in head, head


def test_ok_reads_the_same_as_a_property_and_as_a_call(scratch):
    # A checkpoint of 100 TiB will not fit: the loop must stop, whichever spelling it uses.
    monitor = headroom.Monitor(scratch, ckpt_bytes="100TiB", temp_dir=False, shm=False)
    monitor.sample()
    stopped = []
    if not monitor.ok:
        stopped.append("property")
    if not monitor.ok():
        stopped.append("call")
    assert stopped == ["property", "call"]
    assert monitor.status().ok is False  # a plain bool in the snapshot
    fine = headroom.Monitor(scratch, ckpt_bytes="1KiB", temp_dir=False, shm=False)
    fine.sample()
    assert fine.ok and fine.ok() and fine.ok == True  # noqa: E712
    report = _critical_report()
    assert not report.ok and not report.ok()


@needs_torch
def test_measure_leaves_every_random_state_as_it_found_it():
    import numpy
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Noisy(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, index):
            return torch.full((4,), random.random() + numpy.random.rand() + torch.rand(1).item())

    loader = DataLoader(Noisy(), batch_size=4, shuffle=True, num_workers=2)
    states = (random.getstate(), numpy.random.get_state()[1].copy(), torch.get_rng_state())
    import headroom.torch as ht

    assert ht.measure(loader).batch_bytes == 4096
    assert random.getstate() == states[0]
    assert (numpy.random.get_state()[1] == states[1]).all()
    assert torch.equal(torch.get_rng_state(), states[2])
