"""shm.capacity against a real tmpfs /dev/shm, and a real PyTorch DataLoader of
the same shape in the same namespace: the job fails where check says critical
and succeeds where it says ok."""
import pytest

from conftest import check_json, evidence, finding, have_torch, in_namespace

MiB = 1024 * 1024
SHAPE = "--workers 8 --batch-bytes 32MiB"


def loader_need(workers: int, prefetch: int, batch: int, ranks: int = 1) -> int:
    """The bound of docs/checks.md: per rank (W x P + 2 batches in the loop's hands) x B
    + 4 x (W + 2) pages of queue semaphores."""
    return ranks * ((workers * prefetch + 2) * batch + 4 * (workers + 2) * 4096)


def check_in_shm(size: str, extra: str = "") -> tuple[int, dict]:
    result = in_namespace(f"""
        mount -t tmpfs -o size={size} tmpfs /dev/shm
        rc=0; "$HEADROOM" check {SHAPE} {extra} --json || rc=$?
        echo "rc=$rc" >&2
    """)
    assert result.returncode == 0, result.stderr
    rc = int(result.stderr.strip().rsplit("rc=", 1)[1])
    return rc, check_json(result)


def test_docker_default_64m_is_critical_with_need_and_fix():
    rc, report = check_in_shm("64m")
    shm = finding(report, "shm.capacity")
    assert shm["severity"] == "critical"
    assert report["verdict"] == "critical"
    assert rc == 1
    assert evidence(shm, "size_bytes") == 64 * MiB
    assert evidence(shm, "dataloader_need_bytes") == loader_need(8, 2, 32 * MiB)
    assert any("size=" in line or "--shm-size=" in line for line in shm["remedy"])
    assert "576.2 MiB" in shm["summary"]


def test_4g_shm_is_ok():
    rc, report = check_in_shm("4g")
    shm = finding(report, "shm.capacity")
    assert shm["severity"] == "ok", shm
    assert evidence(shm, "size_bytes") == 4096 * MiB


def test_prefetch_and_ranks_scale_the_need():
    _, report = check_in_shm("4g", "--prefetch 4 --ranks 2")
    shm = finding(report, "shm.capacity")
    assert evidence(shm, "dataloader_need_bytes") == loader_need(8, 4, 32 * MiB, ranks=2)
    assert shm["severity"] == "ok"  # 2.1 GiB of 4 GiB
    _, report = check_in_shm("4g", "--prefetch 4 --ranks 8")
    shm = finding(report, "shm.capacity")
    assert evidence(shm, "dataloader_need_bytes") == loader_need(8, 4, 32 * MiB, ranks=8)
    assert shm["severity"] == "critical"  # 8.5 GiB of 4 GiB


def test_readonly_and_missing_shm_are_critical():
    result = in_namespace("""
        mount -t tmpfs -o size=1g,ro tmpfs /dev/shm
        "$HEADROOM" check --only shm.capacity --json || true
    """)
    assert finding(check_json(result), "shm.capacity")["severity"] == "critical"
    assert "read-only" in finding(check_json(result), "shm.capacity")["summary"]
    result = in_namespace("""
        mount -t tmpfs -o size=1m tmpfs /dev   # a private /dev without shm, as in some pods
        "$HEADROOM" check --only shm.capacity --json || true
    """)
    item = finding(check_json(result), "shm.capacity")
    assert item["severity"] == "critical" and "does not exist" in item["summary"]


@pytest.mark.skipif(not have_torch(), reason="needs Debian's python3-torch")
@pytest.mark.parametrize("size, verdict", [("64m", "critical"), ("4g", "ok")])
def test_real_dataloader_fails_exactly_where_check_says_critical(size, verdict):
    job = "tests/integration/jobs/dataloader_job.py"
    result = in_namespace(f"""
        mount -t tmpfs -o size={size} tmpfs /dev/shm
        "$HEADROOM" check {SHAPE} --only shm.capacity --json > "$OUT/check.json" || true
        rc=0; timeout 120 "$PY" {job} 8 32 24 > "$OUT/job.log" 2>&1 || rc=$?
        echo "job_rc=$rc"
    """, env={"OUT": str(_out_dir(size))}, timeout=300)
    assert result.returncode == 0, result.stderr
    out = _out_dir(size)
    report = (out / "check.json").read_text()
    job_log = (out / "job.log").read_text(errors="replace")
    job_rc = int(result.stdout.strip().rsplit("job_rc=", 1)[1])
    import json
    assert finding(json.loads(report), "shm.capacity")["severity"] == verdict
    if verdict == "critical":
        assert job_rc != 0, job_log
        assert "Bus error" in job_log or "shared memory" in job_log, job_log
    else:
        assert job_rc == 0, job_log
        assert "done" in job_log


def _out_dir(name: str):
    from conftest import REPO
    path = REPO / "build" / "scratch" / f"shm-job-{name}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def meminfo_total() -> int:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal")


def test_the_fix_never_asks_for_more_than_the_host_has():
    # issue 16: --workers 8 --batch-bytes 4GiB on a 23.5 GiB host was "remount,size=72g".
    ram = meminfo_total()
    batch = ram // 4  # 18 batches of a quarter of RAM: four times RAM
    result = in_namespace(f"""
        mount -t tmpfs -o size=64m tmpfs /dev/shm
        "$HEADROOM" check --workers 8 --batch-bytes {batch} --only shm.capacity --json || true
    """)
    shm = finding(check_json(result), "shm.capacity")
    assert shm["severity"] == "critical"
    assert evidence(shm, "memory_total_bytes") == ram
    assert shm["remedy"][0].startswith("no /dev/shm size fixes this here"), shm["remedy"]
    assert not any("size=" in line for line in shm["remedy"]), shm["remedy"]
    assert any("fewer DataLoader workers" in line for line in shm["remedy"])


def test_the_fix_never_asks_for_less_than_is_there():
    # A 1 GiB /dev/shm 98% full of a dead job's segment: the fix is to free it, never a
    # "resize" to the 1 GiB the check asks for without a shape (or to less).
    result = in_namespace("""
        mount -t tmpfs -o size=1g tmpfs /dev/shm
        head -c 1000M /dev/zero > /dev/shm/torch_999_1
        "$HEADROOM" check --only shm.capacity --json || true
    """)
    shm = finding(check_json(result), "shm.capacity")
    assert shm["severity"] == "critical", shm
    assert shm["remedy"][0].startswith("/dev/shm is already 1.0 GiB"), shm["remedy"]
    assert "headroom clean --shm" in shm["remedy"][0]
    assert not any("remount,size=" in line for line in shm["remedy"]), shm["remedy"]
