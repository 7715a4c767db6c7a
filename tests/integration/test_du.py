"""headroom du on real trees: sizes agree with GNU du, hard links count once,
symlinks are not followed, a tmpfs mounted inside the tree is not entered,
an unreadable directory is reported, and a process holding a file is named."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import in_namespace


def make_tree(root: Path) -> None:
    for top in range(4):
        for sub in range(3):
            d = root / f"dir{top}" / f"sub{sub}"
            d.mkdir(parents=True)
            for n in range(10):
                (d / f"f{n}").write_bytes(b"x" * (1000 * (top + 1) * (n + 1)))
    (root / "big.bin").write_bytes(b"y" * (3 << 20))
    (root / "empty").write_bytes(b"")


def du_json(headroom: str, *args: str) -> dict:
    result = subprocess.run([headroom, "du", "--json", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def gnu_du_bytes(path: Path, *flags: str) -> int:
    out = subprocess.run(["du", "-s", "--block-size=1", *flags, str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def entry(report: dict, name: str) -> dict:
    for item in report["entries"]:
        if item["name"] == name:
            return item
    pytest.fail(f"no entry {name} in {[e['name'] for e in report['entries']]}")


def test_total_matches_gnu_du_and_answer_comes_first(headroom, scratch):
    make_tree(scratch)
    report = du_json(headroom, str(scratch), "--top", "0")
    assert report["total"]["disk_bytes"] == gnu_du_bytes(scratch)
    assert report["total"]["files"] == 4 * 3 * 10 + 2
    sizes = [e["disk_bytes"] for e in report["entries"]]
    assert sizes == sorted(sizes, reverse=True)
    assert [e["name"] for e in report["entries"][:3]] == ["big.bin", "dir3", "dir2"]
    assert sum(e["disk_bytes"] for e in report["entries"]) + os.lstat(scratch).st_blocks * 512 == \
        report["total"]["disk_bytes"]
    # Human output: the total on the first line, then the table.
    text = subprocess.run([headroom, "du", str(scratch)], capture_output=True, text=True, check=True).stdout
    first = text.splitlines()[0]
    assert first.startswith(f"{scratch}: ") and "on disk in 122 files" in first
    assert text.splitlines()[3].endswith("big.bin") and text.splitlines()[4].endswith("dir3/")


def test_apparent_size_and_top_fold_the_rest(headroom, scratch):
    make_tree(scratch)
    report = du_json(headroom, str(scratch), "--apparent-size", "--top", "2")
    assert report["size"] == "apparent"
    assert [e["name"] for e in report["entries"]] == ["big.bin", "dir3"]
    assert report["other"]["entries"] == 4
    assert entry(report, "big.bin")["apparent_bytes"] == 3 << 20


def test_hard_links_count_once(headroom, scratch):
    make_tree(scratch)
    for i in range(3):
        os.link(scratch / "big.bin", scratch / f"dir{i}" / "link-to-big")
    report = du_json(headroom, str(scratch))
    assert report["total"]["disk_bytes"] == gnu_du_bytes(scratch)
    assert report["hard_links_skipped"] == 3
    assert report["total"]["disk_bytes"] < gnu_du_bytes(scratch, "--count-links")


def test_symlinks_are_not_followed(headroom, scratch):
    tree = scratch / "tree"
    make_tree(tree)
    outside = scratch / "outside"
    outside.mkdir()
    (outside / "huge").write_bytes(b"z" * (8 << 20))
    (tree / "link").symlink_to(outside)
    (tree / "dir0" / "inner-link").symlink_to(outside / "huge")
    report = du_json(headroom, str(tree))
    assert report["total"]["disk_bytes"] == gnu_du_bytes(tree)
    assert report["total"]["disk_bytes"] < 8 << 20
    link = entry(report, "link")
    assert link["type"] == "symlink" and link["apparent_bytes"] == len(str(outside))
    # The root itself given as a symlink is followed, as du -H does, and said so.
    report = du_json(headroom, str(tree / "link"))
    assert report["path"] == str(outside) and report["given_path"] == str(tree / "link")
    assert report["total"]["files"] == 1 and report["total"]["apparent_bytes"] >= 8 << 20


def test_tmpfs_mounted_inside_is_not_crossed_unless_asked(headroom, scratch):
    tree = scratch / "tree"
    out = scratch / "out"
    make_tree(tree)
    out.mkdir()
    (tree / "mnt").mkdir()
    result = in_namespace(f"""
        mount -t tmpfs -o size=64m tmpfs {tree}/mnt
        head -c 16777216 /dev/zero > {tree}/mnt/inside
        mkdir {tree}/dir1/nested && mount -t tmpfs tmpfs {tree}/dir1/nested
        head -c 4194304 /dev/zero > {tree}/dir1/nested/deep
        echo "$(du -s -x --block-size=1 {tree} | cut -f1)" > {out}/gnu-x
        "$HEADROOM" du --json {tree} > {out}/stay.json
        "$HEADROOM" du --json --cross-mounts {tree} > {out}/cross.json
        "$HEADROOM" du {tree} > {out}/stay.txt
    """)
    assert result.returncode == 0, result.stderr
    stay = json.loads((out / "stay.json").read_text())
    cross = json.loads((out / "cross.json").read_text())
    assert stay["one_file_system"] is True
    assert stay["mounts_skipped"]["count"] == 2
    assert sorted(stay["mounts_skipped"]["paths"]) == [f"{tree}/dir1/nested", f"{tree}/mnt"]
    assert entry(stay, "mnt")["mount_point"] is True and entry(stay, "mnt")["disk_bytes"] == 0
    assert stay["total"]["disk_bytes"] < 16 << 20
    assert stay["total"]["disk_bytes"] == int((out / "gnu-x").read_text())
    assert cross["total"]["disk_bytes"] >= stay["total"]["disk_bytes"] + (20 << 20)
    assert entry(cross, "mnt")["disk_bytes"] >= 16 << 20
    assert "Not entered: 2 mount point(s)" in (out / "stay.txt").read_text()
    # The mounts vanished with the namespace.
    assert not (tree / "mnt" / "inside").exists()


def test_unreadable_directory_is_reported_not_fatal(headroom, scratch):
    make_tree(scratch)
    os.chmod(scratch, 0o755)
    locked = scratch / "dir2" / "sub1"
    os.chmod(locked, 0o000)
    try:
        run = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", headroom, "du"]
        result = subprocess.run([*run, "--json", str(scratch)], capture_output=True, text=True, timeout=60)
        text = subprocess.run([*run, str(scratch)], capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(locked, 0o755)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["unreadable"]["count"] == 1
    assert report["unreadable"]["paths"] == [{"path": str(locked), "reason": "Permission denied"}]
    assert entry(report, "dir2")["files"] == 20  # the 10 files in the locked dir are missing
    assert text.returncode == 0
    assert f"Unreadable: 1 path(s) not counted:\n  {locked}: Permission denied" in text.stdout


def test_names_the_process_holding_a_file(headroom, scratch):
    make_tree(scratch)
    held = scratch / "dir1" / "sub2" / "f3"
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(held)!r}); import time; time.sleep(60)"])
    try:
        time.sleep(0.5)
        report = du_json(headroom, str(scratch))
    finally:
        holder.kill()
        holder.wait()
    dir1 = entry(report, "dir1")
    assert dir1["in_use"] is True and dir1["held_files"] == 1
    assert {"pid": holder.pid, "how": "fd"}.items() <= dir1["holders"][0].items()
    assert entry(report, "dir0")["in_use"] is False


def test_missing_path_is_a_usage_error(headroom, scratch):
    result = subprocess.run([headroom, "du", str(scratch / "nope")], capture_output=True, text=True)
    assert result.returncode == 2
    assert "nope" in result.stderr and result.stdout == ""


def test_a_symlink_given_on_the_command_line_is_followed_by_du_who_and_prune(headroom, scratch):
    """outputs -> /scratch/...: du, who and prune examine the target, as du -H and fuser
    do, and say so; links met inside the walk are still never followed."""
    real = scratch / "scratch" / "run7" / "outputs"
    for step in (100, 200):
        (real / f"checkpoint-{step}").mkdir(parents=True)
        (real / f"checkpoint-{step}" / "model.safetensors").write_bytes(os.urandom(1 << 20))
    (real / "elsewhere").symlink_to(scratch)  # inside the walk: not followed
    link = scratch / "outputs"
    link.symlink_to(real)

    du = subprocess.run([headroom, "du", f"{link}/"], capture_output=True, text=True)
    assert du.returncode == 0, du.stderr
    assert f"{link} -> {real}" in du.stdout, du.stdout
    report = du_json(headroom, str(link))
    assert report["path"] == str(real) and report["given_path"] == str(link)
    assert 2 << 20 <= report["total"]["apparent_bytes"] < 3 << 20, report["total"]

    worker = subprocess.Popen(["sleep", "60"], cwd=real / "checkpoint-200")
    try:
        who = subprocess.run([headroom, "--json", "who", str(link)], capture_output=True, text=True)
        assert who.returncode == 0, who.stdout + who.stderr  # 0: something holds it
        holders = json.loads(who.stdout)["paths"][0]["holders"]
        assert any(h["pid"] == worker.pid and h["how"] == "cwd" for h in holders), holders
    finally:
        worker.kill()
        worker.wait()

    prune = subprocess.run([headroom, "prune", str(link), "--keep-last", "1"],
                           capture_output=True, text=True)
    assert prune.returncode == 0, prune.stderr
    assert "checkpoint-100/" in prune.stdout and f"{link} -> {real}" in prune.stdout, prune.stdout
