"""The content-addressed SQLite cache: storage, namespaces, schemas, counters, atomic batches."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest

from ragnb.core.cache import Cache, default_cache_dir, make_key, text_hash
from ragnb.core.paths import display_path


@pytest.fixture
def cache(tmp_path):
    with Cache(tmp_path) as c:
        yield c


def test_put_get_roundtrip(cache):
    cache.put("ns", "k1", b"\x00\x01value")
    assert cache.get("ns", "k1") == b"\x00\x01value"
    assert cache.get("ns", "absent") is None
    cache.put("ns", "k1", b"replaced")
    assert cache.get("ns", "k1") == b"replaced"
    assert len(cache) == 1
    assert cache.path == cache.directory / "cache.sqlite"


def test_get_many_returns_only_found(cache):
    cache.put_many("ns", {"a": b"1", "b": b"2"})
    assert cache.get_many("ns", ["a", "b", "c"]) == {"a": b"1", "b": b"2"}
    assert cache.get_many("ns", []) == {}


def test_get_many_beyond_one_sql_chunk(cache):
    # get_many queries in chunks of 500 keys
    items = {f"k{i}": str(i).encode() for i in range(1203)}
    cache.put_many("ns", items)
    assert cache.get_many("ns", list(items) + ["missing"]) == items


def test_namespaces_are_isolated(cache):
    cache.put("embeddings", "same-key", b"vector")
    cache.put("judge", "same-key", b"label")
    assert cache.get("embeddings", "same-key") == b"vector"
    assert cache.get("judge", "same-key") == b"label"
    assert cache.get("other", "same-key") is None
    assert len(cache) == 2


def test_key_schema_recorded(tmp_path):
    with Cache(tmp_path) as c:
        assert c.key_schema("embeddings") is None
        c.register_schema("embeddings", ["text_sha256", "model", "kind", "params"])
        assert c.key_schema("embeddings") == ["kind", "model", "params", "text_sha256"]
        assert c.summary()["namespaces"] == {}  # no traffic yet
    with Cache(tmp_path) as c:  # stored in the file
        assert c.key_schema("embeddings") == ["kind", "model", "params", "text_sha256"]
        c.get("embeddings", "x")
        assert c.summary()["namespaces"]["embeddings"]["key_schema"] == [
            "kind",
            "model",
            "params",
            "text_sha256",
        ]


def test_stats_count_hits_misses_writes(cache):
    cache.put_many("ns", {"a": b"1", "b": b"2"})
    cache.get_many("ns", ["a", "b", "c", "a"])  # duplicate "a" is looked up once
    cache.get("ns", "d")
    cache.get("other", "a")
    assert cache.stats["ns"] == {"writes": 2, "hits": 2, "misses": 2}
    assert cache.stats["other"] == {"hits": 0, "misses": 1}
    summary = cache.summary()
    assert summary["path"] == display_path(cache.path)  # no absolute local path in a report
    assert summary["namespaces"]["ns"] == {
        "hits": 2,
        "misses": 2,
        "writes": 2,
        "key_schema": None,
    }


def test_persistence_across_cache_objects(tmp_path):
    with Cache(tmp_path) as first:
        first.put_many("ns", {"a": b"1", "b": b"2"})
    with Cache(tmp_path) as second:
        assert second.get_many("ns", ["a", "b"]) == {"a": b"1", "b": b"2"}
        assert second.stats["ns"]["hits"] == 2  # counters are per object, not stored
        assert "writes" not in second.stats["ns"]


def test_two_open_caches_see_each_others_writes(tmp_path):
    with Cache(tmp_path) as a, Cache(tmp_path) as b:
        a.put("ns", "k", b"v")
        assert b.get("ns", "k") == b"v"


def test_default_cache_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGNB_CACHE_DIR", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    with Cache() as c:
        assert c.path == tmp_path / "here" / "cache.sqlite"
    monkeypatch.delenv("RAGNB_CACHE_DIR")
    assert default_cache_dir().parts[-2:] == (".cache", "ragnb")


def test_make_key_canonical():
    parts = {"model": "m", "params": {"dimensions": 8, "normalize": True}, "kind": "query"}
    shuffled = {"kind": "query", "params": {"normalize": True, "dimensions": 8}, "model": "m"}
    assert make_key(parts) == make_key(shuffled)
    # hand-computed: SHA-256 of the sorted, white-space-free JSON
    blob = '{"kind":"query","model":"m","params":{"dimensions":8,"normalize":true}}'
    assert make_key(parts) == hashlib.sha256(blob.encode()).hexdigest()
    assert len(make_key(parts)) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"model": "m2"},
        {"kind": "passage"},
        {"params": {"dimensions": 16, "normalize": True}},
        {"params": {"dimensions": 8, "normalize": False}},
        {"extra": None},
    ],
)
def test_make_key_changes_with_any_part(change):
    parts = {"model": "m", "params": {"dimensions": 8, "normalize": True}, "kind": "query"}
    assert make_key({**parts, **change}) != make_key(parts)


def test_make_key_unicode_is_not_escaped():
    # ensure_ascii=False: the key is over the UTF-8 text itself
    blob = json.dumps({"t": "café"}, ensure_ascii=False, separators=(",", ":"))
    assert make_key({"t": "café"}) == hashlib.sha256(blob.encode("utf-8")).hexdigest()


def test_text_hash():
    assert text_hash("abc") == hashlib.sha256(b"abc").hexdigest()
    assert text_hash("é") == hashlib.sha256("é".encode()).hexdigest()


def test_batch_with_unencodable_value_writes_nothing(tmp_path):
    with Cache(tmp_path) as c:
        c.put("ns", "before", b"0")
        with pytest.raises(TypeError):
            c.put_many("ns", {"good": b"1", "bad": "not bytes"})  # type: ignore[dict-item]
        assert c.get("ns", "good") is None
        assert c.stats["ns"]["writes"] == 1


def test_batch_failing_mid_insert_is_rolled_back(tmp_path):
    # The first row is inserted before the second fails inside SQLite: the whole batch must be
    # rolled back, not left pending and committed by the next successful write.
    with Cache(tmp_path) as c:
        with pytest.raises(sqlite3.DatabaseError):
            c.put_many("ns", {"good": b"1", None: b"2"})  # type: ignore[dict-item]
        assert c.get("ns", "good") is None  # not visible to the same connection
        c.put("ns", "later", b"3")  # a later commit must not carry the failed batch
        assert c.get_many("ns", ["good", "later"]) == {"later": b"3"}
    with Cache(tmp_path) as fresh:
        assert fresh.get_many("ns", ["good", "later"]) == {"later": b"3"}


def test_derived_file_is_made_once_per_source_content_and_tag(tmp_path):
    from ragnb.core.cache import derived_file

    made = []

    def build(source, target):
        made.append(source.read_text())
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.read_text().upper())

    source = tmp_path / "model.txt"
    source.write_text("weights")
    first = derived_file(source, "onnx", "v1", build, what="ONNX model", cache_dir=tmp_path / "c")
    again = derived_file(source, "onnx", "v1", build, what="ONNX model", cache_dir=tmp_path / "c")
    assert first == again and first.read_text() == "WEIGHTS" and made == ["weights"]
    assert first.parent == tmp_path / "c" / "onnx" and first.name.endswith("-v1.onnx")
    other_tag = derived_file(
        source, "onnx", "v2", build, what="ONNX model", cache_dir=tmp_path / "c"
    )
    source.write_text("other weights")
    other_content = derived_file(source, "onnx", "v1", build, what="x", cache_dir=tmp_path / "c")
    assert len({first, other_tag, other_content}) == 3 and made[1:] == ["weights", "other weights"]
    with pytest.raises(FileNotFoundError, match="no such GGUF model"):
        derived_file(tmp_path / "none", "gguf", "v1", build, what="GGUF model")
