"""The one bounded reader (io/input_files.py): a file is read within its limit whatever its size
claims, and no more memory is asked for than the file holds (issue 44: a read of the limit, 1 GiB,
made a buffer of that size for any file, which an address-space limit refuses)."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from airflow_provider_coremodels.io.input_files import Unreadable, read_limited


@pytest.mark.parametrize(("size", "limit"), [(10, 200), (100, 200), (None, 200), (0, 200)])
def test_a_file_is_read_whole_whatever_its_size_said(size: int | None, limit: int) -> None:
    """A file that grew after its size was taken (10 then 100 bytes) is read on, within the limit."""
    assert read_limited(io.BytesIO(b"x" * 100), size, limit) == b"x" * 100


@pytest.mark.parametrize("size", [10, 50, None])
def test_a_file_past_the_limit_is_refused_however_it_got_there(size: int | None) -> None:
    with pytest.raises(Unreadable, match="50-byte limit"):
        read_limited(io.BytesIO(b"x" * 100), size, 50)


def test_a_small_file_is_read_under_an_address_space_limit_below_the_read_limit(tmp_path: Path) -> None:
    """With 1 GiB as the limit and 600 MB of address space, a 1 KB file reads (it asked for 1 GiB)."""
    small = tmp_path / "small.json"
    small.write_bytes(b"[]" * 512)
    code = textwrap.dedent(f"""
        import resource, sys
        from airflow_provider_coremodels.io.input_files import read_bounded
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + (600 << 20), resource.RLIM_INFINITY))
        print(len(read_bounded({str(small)!r}, 1 << 30)))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1024"
