"""ragnb.core.provenance.file_sha256: the one file digest (golden-set stage markers, ONNX files)."""

from __future__ import annotations

import hashlib

import pytest

from ragnb.core.provenance import file_sha256
from ragnb.studies.golden import store


@pytest.mark.parametrize("size", [0, 5, (1 << 20) - 1, 1 << 20, (1 << 20) + 7, 3 * (1 << 20) + 1])
def test_matches_hashlib_across_chunk_boundaries(tmp_path, size):
    data = (bytes(range(251)) * (size // 251 + 1))[:size]
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
    assert file_sha256(str(path)) == hashlib.sha256(data).hexdigest()


def test_empty_file_digest_and_golden_store_reexport(tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    # the SHA-256 of no bytes (FIPS 180-4 test vector)
    expected = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert file_sha256(path) == expected
    assert store.file_sha256 is file_sha256


def test_missing_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        file_sha256(tmp_path / "absent")
