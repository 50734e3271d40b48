"""Typed, validated configs (pydantic v2) loaded from JSON or YAML.

Every config model derives from :class:`StrictModel`: unknown keys, wrong types and out-of-range
values are errors. :func:`load_config` turns pydantic's errors into one :class:`ConfigError` whose
message names the file, each offending field path and what is allowed.

Fields typed :data:`InputPath` (task files, grid files, transitions runs) are inputs: a relative value
read from a config file resolves against that file's folder (:func:`load_config`, ``base_dir``), so a
config names its inputs the same way from any working directory. Outputs (``--out``, run folders)
stay relative to the working directory. ``docs/configs.md`` lists which fields are which.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, TypeAdapter, ValidationError, ValidationInfo

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A config file is malformed; the message names the file, the field path and what is allowed."""

    def __init__(self, message: str, *, file: str | None = None, errors: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.file = file
        self.errors = errors or []


def config_error(source: str | os.PathLike[str], field: str, message: str) -> ConfigError:
    """The :class:`ConfigError` for one field of a config file: ``<source>: <field>: <message>``."""
    return ConfigError(f"{source}: {field}: {message}", file=str(source))


#: validation context key: the folder that relative :data:`InputPath` values resolve against
CONFIG_DIR = "config_dir"


def _resolve_input(value: str, info: ValidationInfo) -> str:
    base = (info.context or {}).get(CONFIG_DIR)
    if base is None or not value:
        return value  # validated from a dict (a stored config.json, a test): taken as given
    p = Path(value).expanduser()
    return value if p.is_absolute() else os.path.normpath(Path(base) / p)


#: a path a config reads (an input): relative values in a config file resolve against its folder
InputPath = Annotated[str, AfterValidator(_resolve_input)]


class StrictModel(BaseModel):
    """Base for every config section: unknown keys are errors, instances are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a ``.json``, ``.yaml`` or ``.yml`` file into a dict, with a clear error on bad syntax."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: config file not found", file=str(p))
    text = p.read_text()
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as e:  # yaml.YAMLError / json.JSONDecodeError
        raise ConfigError(f"{p}: cannot parse: {e}", file=str(p)) from e
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: top level must be a mapping, got {type(data).__name__}", file=str(p))
    return data


def _models_in(tp: Any) -> list[type[BaseModel]]:
    """The pydantic models a field annotation can hold (through Optional, unions, lists, dicts)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    return [m for a in get_args(tp) for m in _models_in(a)]


def _allowed_keys(model: Any, loc: tuple[Any, ...]) -> list[str] | None:
    """The field names of the model holding the unknown key at ``loc`` (None: not one model)."""
    found: list[type[BaseModel]] = _models_in(model)
    for part in loc[:-1]:
        named = [m for m in found if m.__name__ == part]  # a union member pydantic names in the path
        fields = [m.model_fields[part] for m in found if isinstance(part, str) and part in m.model_fields]
        if named:
            found = named
        elif fields:
            found = [m for f in fields for m in _models_in(f.annotation)]
        # else a list index or a dict key: the same models hold the next part
    unique = list(dict.fromkeys(found))
    return list(unique[0].model_fields) if len(unique) == 1 else None


def _describe(err: dict[str, Any], model: Any = None) -> str:
    loc = ".".join(str(x) for x in err.get("loc", ())) or "<root>"
    typ = err.get("type", "")
    msg = err.get("msg", "")
    ctx = err.get("ctx") or {}
    if typ == "extra_forbidden":
        keys = _allowed_keys(model, tuple(err.get("loc", ()))) if model is not None else None
        if keys:
            return f"{loc}: unknown key (allowed here: {', '.join(keys)})"
        return f"{loc}: unknown key (not allowed here; check the spelling)"
    if typ == "missing":
        return f"{loc}: required field is missing"
    allowed = ""
    if "expected" in ctx:
        allowed = f" (allowed: {ctx['expected']})"
    elif typ == "union_tag_invalid" and "expected_tags" in ctx:
        allowed = f" (allowed: {ctx['expected_tags']})"
    got = err.get("input")
    got_s = "" if isinstance(got, dict | list) else f"; got {got!r}"
    return f"{loc}: {msg}{allowed}{got_s}"


def validate_config(
    data: dict[str, Any],
    model: type[M] | Any,
    *,
    source: str = "<config>",
    base_dir: str | os.PathLike[str] | None = None,
) -> M:
    """Validate ``data`` against a model (or any pydantic-validatable type, e.g. a union); relative
    :data:`InputPath` values resolve against ``base_dir`` when given (the config file's folder)."""
    ctx = None if base_dir is None else {CONFIG_DIR: str(Path(base_dir).absolute())}
    try:
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model.model_validate(data, context=ctx)  # type: ignore[return-value]
        return TypeAdapter(model).validate_python(data, context=ctx)  # type: ignore[no-any-return]
    except ValidationError as e:
        errs = e.errors(include_url=False)
        lines = "\n".join("  - " + _describe(dict(x), model) for x in errs)
        raise ConfigError(
            f"{source}: invalid config ({len(errs)} error(s)):\n{lines}",
            file=source,
            errors=[dict(x) for x in errs],
        ) from None


def load_config(path: str | os.PathLike[str], model: type[M] | Any) -> M:
    """Read and validate a config file; errors name the file and field path; relative input paths
    resolve against the file's folder."""
    return validate_config(read_config_file(path), model, source=str(path), base_dir=Path(path).parent)


def dump_config(config: BaseModel, path: str | os.PathLike[str]) -> None:
    """Write a config as YAML (or JSON by suffix) so it loads back to an equal model."""
    p = Path(path)
    data = config.model_dump(mode="json")
    if p.suffix.lower() == ".json":
        p.write_text(json.dumps(data, indent=2))
    else:
        import yaml

        p.write_text(yaml.safe_dump(data, sort_keys=False))
