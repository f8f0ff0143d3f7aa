"""Settings from `[tool.cuport]` in pyproject.toml, or cuport.toml / .cuport.toml, plus CLI overrides.

Rule selection follows ruff: within one layer (defaults, file, CLI) more specific selectors win
(`select = ["CP101"]` beats `ignore = ["CP1"]`), and a layer with `select` starts over.
"""
from __future__ import annotations

import os
import re

from porter.lint import registry
from porter.record import Record

CONFIG_NAMES = (".cuport.toml", "cuport.toml", "pyproject.toml")  # the same order as ruff
DEFAULT_EXCLUDE = [".git", ".venv", "build", "dist", "node_modules", ".cuport_cache"]
DEFAULT_TARGET_ARCH = ["sm_90", "gfx90a", "gfx1030", "vulkan"]

# Keys under [tool.cuport]; sub-tables owned by other commands pass through in `raw`.
KEYS = {"select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude", "target-arch",
        "launch", "vulkan-max-shared", "include-dirs", "defines", "extra-args", "cache-dir", "timeout",
        "memory-limit"}
PASS_THROUGH = {"translate", "verify"}


class ConfigError(Exception):
    """A configuration file or option that cannot be used (exit code 2)."""


class Settings(Record):
    select: set
    ignore: set
    extend_select: set
    per_file_ignores: list                                   # [(glob, {codes})]
    exclude: list
    target_arch: list
    launch: dict                                             # kernel -> {"block": [x, y, z]}
    vulkan_max_shared: int
    include_dirs: list
    defines: list                                            # "NAME" or "NAME=VALUE"
    extra_args: list
    cache_dir: str
    timeout: float                                           # seconds per file (porter.isolate; 0: none)
    memory_limit: int                                        # MiB per file (porter.isolate; 0: none)
    config_path: str | None
    root: str                                                # globs are relative to this directory
    raw: dict

    def __init__(self, select=None, ignore=None, extend_select=None, per_file_ignores=None, exclude=None,
                 target_arch=None, launch=None, vulkan_max_shared=32768, include_dirs=None, defines=None,
                 extra_args=None, cache_dir=".cuport_cache", timeout=60.0, memory_limit=4096, config_path=None,
                 root=None, raw=None):
        self.select = set(registry.RULES) if select is None else select
        self.ignore = set() if ignore is None else ignore
        self.extend_select = set() if extend_select is None else extend_select
        self.per_file_ignores = [] if per_file_ignores is None else per_file_ignores
        self.exclude = list(DEFAULT_EXCLUDE) if exclude is None else exclude
        self.target_arch = list(DEFAULT_TARGET_ARCH) if target_arch is None else target_arch
        self.launch = {} if launch is None else launch
        self.vulkan_max_shared = vulkan_max_shared
        self.include_dirs = [] if include_dirs is None else include_dirs
        self.defines = [] if defines is None else defines
        self.extra_args = [] if extra_args is None else extra_args
        self.cache_dir = cache_dir
        self.timeout = timeout
        self.memory_limit = memory_limit
        self.config_path = config_path
        self.root = os.getcwd() if root is None else root
        self.raw = {} if raw is None else raw

    def enabled_codes(self, filename: str) -> set[str]:
        """Codes to check in `filename`: the selection minus its per-file-ignores."""
        codes = (self.select | self.extend_select) - self.ignore
        rel = self.relative(filename)
        for pattern, ignored in self.per_file_ignores:
            if path_matches(pattern, rel):
                codes -= ignored
        return codes

    def is_excluded(self, path: str) -> bool:
        """Whether an exclude glob matches the path, one of its directories, or a component name."""
        return any(path_matches(p, self.relative(path), components=True) for p in self.exclude)

    def relative(self, path: str) -> str:
        rel = os.path.relpath(os.path.abspath(path), self.root)
        return (os.path.abspath(path) if rel.startswith("..") else rel).replace(os.sep, "/")

    def _key(self) -> dict:
        return {
            "codes": sorted((self.select | self.extend_select) - self.ignore),
            "per_file_ignores": [[p, sorted(c)] for p, c in self.per_file_ignores],
            "target_arch": self.target_arch, "launch": self.launch,
            "vulkan_max_shared": self.vulkan_max_shared, "include_dirs": self.include_dirs,
            "defines": self.defines, "extra_args": self.extra_args,
        }

    def hash(self) -> str:
        """Stable across runs and key order; only what changes lint results counts (cache key)."""
        import json
        blob = json.dumps(self._key(), sort_keys=True, separators=(",", ":"))
        from porter.source import sha256
        return sha256(blob.encode()).hexdigest()[:16]

    def show(self) -> str:
        """--show-settings."""
        rows = {
            "config": self.config_path or "(none: defaults)",
            "root": self.root,
            "enabled": sorted((self.select | self.extend_select) - self.ignore),
            "ignored": sorted(self.ignore),
            "per-file-ignores": {p: sorted(c) for p, c in self.per_file_ignores},
            "exclude": self.exclude,
            "target-arch": self.target_arch,
            "launch": self.launch,
            "vulkan-max-shared": self.vulkan_max_shared,
            "include-dirs": self.include_dirs,
            "defines": self.defines,
            "extra-args": self.extra_args,
            "cache-dir": self.cache_dir,
            "timeout": self.timeout,
            "memory-limit": self.memory_limit,
            "settings-hash": self.hash(),
        }
        import json
        return "".join(f"{k:<18} = {json.dumps(v)}\n" for k, v in rows.items())


def path_matches(pattern: str, rel: str, components: bool = False) -> bool:
    """Glob against a root-relative path: `*` stays within a directory, `**` crosses them.

    A pattern also matches everything below a matching directory, and a pattern without `/`
    matches a base name anywhere (so `*.cuh` or `build` need no `**/`)."""
    regex = _glob_regex(pattern.rstrip("/"))
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    if any(regex.fullmatch(p) for p in prefixes):
        return True
    if "/" not in pattern.rstrip("/"):
        names = parts if components else parts[-1:]
        return any(regex.fullmatch(n) for n in names)
    return False


_GLOB_CACHE: dict[str, re.Pattern] = {}


def _glob_regex(pattern: str) -> re.Pattern:
    if pattern not in _GLOB_CACHE:
        out, i = [], 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
            elif pattern.startswith("**", i):
                out.append(".*")
                i += 2
            elif pattern[i] == "*":
                out.append("[^/]*")
                i += 1
            elif pattern[i] == "?":
                out.append("[^/]")
                i += 1
            elif pattern[i] == "[" and "]" in pattern[i + 1:]:
                j = pattern.index("]", i + 2 if pattern[i + 1:i + 2] in ("!", "]") else i + 1)
                body = pattern[i + 1:j]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = j + 1
            else:
                out.append(re.escape(pattern[i]))
                i += 1
        _GLOB_CACHE[pattern] = re.compile("".join(out))
    return _GLOB_CACHE[pattern]


# -- discovery -----------------------------------------------------------------------------------
def find_config(start_dir: str) -> str | None:
    """The closest config file from start_dir upwards, stopping at the repository root (`.git`)."""
    d = os.path.abspath(start_dir)
    while True:
        for name in CONFIG_NAMES:
            path = os.path.join(d, name)
            if os.path.isfile(path) and (name != "pyproject.toml" or _has_cuport_table(path)):
                return path
        parent = os.path.dirname(d)
        if parent == d or os.path.exists(os.path.join(d, ".git")):
            return None
        d = parent


def _has_cuport_table(path: str) -> bool:
    with open(path, "rb") as fh:
        data = fh.read()
    if b"cuport" not in data:  # cheap test first: most pyproject.toml files are not ours
        return False
    return "cuport" in _read_toml(path, data).get("tool", {})


def _read_toml(path: str, data: bytes | None = None) -> dict:
    import tomllib
    try:
        if data is None:
            with open(path, "rb") as fh:
                data = fh.read()
        return tomllib.loads(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _table(path: str) -> dict:
    doc = _read_toml(path)
    if os.path.basename(path) != "pyproject.toml":
        return doc
    table = doc.get("tool", {}).get("cuport")
    if table is None:
        raise ConfigError(f"{path}: no [tool.cuport] table")
    return table


# -- loading -------------------------------------------------------------------------------------
def load_settings(start_dir: str = ".", config_path: str | None = None, isolated: bool = False,
                  cli: dict | None = None) -> Settings:
    """Defaults, then the config file (given, or the closest one), then CLI overrides.

    `cli` keys: select, ignore, extend_select (lists of selectors; None = not given), and
    target_arch, exclude, include_dirs, defines, extra_args, cache_dir (replace the file's value)."""
    if isolated and config_path:
        raise ConfigError("--config cannot be used with --isolated")
    path = None if isolated else (config_path or find_config(start_dir))
    s = Settings()
    layers = [{"select": ["ALL"]}]
    if path:
        if not os.path.isfile(path):
            raise ConfigError(f"{path}: config file not found")
        path = os.path.abspath(path)
        s.config_path, s.root = path, os.path.dirname(path)
        table = _table(path)
        s.raw = table
        layers.append(_apply_file(s, table, path))
    else:
        s.root = os.path.abspath(start_dir)
    if cli:
        layers.append(_apply_cli(s, cli))
    s.select, s.ignore, s.extend_select = _select(layers)
    return s


def _apply_file(s: Settings, t: dict, path: str) -> dict:
    for key in t:
        if key not in KEYS and key not in PASS_THROUGH:
            import difflib
            close = difflib.get_close_matches(key.replace("_", "-"), KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{path}: unknown key '{key}' in cuport settings{hint}")
    where = f"{path}: "
    layer = {"select": _strs(t, "select", where), "ignore": _strs(t, "ignore", where) or [],
             "extend_select": _strs(t, "extend-select", where) or [], "where": where}
    for glob, codes in _get(t, "per-file-ignores", dict, where, {}).items():
        if isinstance(codes, str):
            codes = [codes]
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise ConfigError(f"{where}per-file-ignores.{glob}: expected a list of rule codes")
        s.per_file_ignores.append((glob, _resolve(codes, f"{where}per-file-ignores.{glob}: ")))
    if "exclude" in t:
        s.exclude = _strs(t, "exclude", where)
    s.exclude += _strs(t, "extend-exclude", where) or []
    for key in ("exclude", "extend-exclude"):
        for glob in t.get(key) or []:
            _check_glob(glob, f"{where}{key}: ")
    for glob in s.per_file_ignores:
        _check_glob(glob[0], f"{where}per-file-ignores: ")
    for key in PASS_THROUGH:
        _get(t, key, dict, where, None)
    s.target_arch = _strs(t, "target-arch", where) or s.target_arch
    s.launch = _launch(_get(t, "launch", dict, where, {}), where)
    s.vulkan_max_shared = _get(t, "vulkan-max-shared", int, where, s.vulkan_max_shared)
    if s.vulkan_max_shared <= 0:
        raise ConfigError(f"{where}vulkan-max-shared: expected a positive number of bytes, got {s.vulkan_max_shared}")
    s.include_dirs = [os.path.join(s.root, p) for p in _strs(t, "include-dirs", where) or []]
    defines = _get(t, "defines", (list, dict), where, [])
    s.defines = [f"{k}={v}" for k, v in defines.items()] if isinstance(defines, dict) else \
        (_strs(t, "defines", where) or [])
    s.extra_args = _strs(t, "extra-args", where) or []
    s.timeout = float(_limit(t, "timeout", (int, float), where, s.timeout, "seconds"))
    s.memory_limit = _limit(t, "memory-limit", int, where, s.memory_limit, "MiB")
    s.cache_dir = os.path.join(s.root, _get(t, "cache-dir", str, where, s.cache_dir))
    if not _get(t, "cache-dir", str, where, s.cache_dir).strip():
        raise ConfigError(f"{where}cache-dir: expected a directory name, got an empty string")
    return layer


def _check_glob(glob: str, where: str) -> None:
    """A glob that cannot match anything sensible (empty, a bad character range) is a config error."""
    if not glob.strip():
        raise ConfigError(f"{where}empty glob")
    try:
        _glob_regex(glob.rstrip("/") or "/")
    except (re.error, ValueError) as exc:
        why = exc if isinstance(exc, re.error) else "unterminated character set"
        raise ConfigError(f"{where}bad glob '{glob}': {why}") from None


def _apply_cli(s: Settings, cli: dict) -> dict:
    known = {"select", "ignore", "extend_select", "target_arch", "exclude", "include_dirs", "defines",
             "extra_args", "cache_dir", "timeout", "memory_limit"}
    unknown = set(cli) - known
    if unknown:
        raise TypeError(f"unknown CLI settings: {sorted(unknown)}")
    for key in ("target_arch", "exclude", "defines", "extra_args"):
        if cli.get(key) is not None:
            setattr(s, key, _split(cli[key]))
    if cli.get("include_dirs") is not None:
        s.include_dirs = [os.path.abspath(p) for p in cli["include_dirs"]]
    if cli.get("cache_dir") is not None:
        s.cache_dir = os.path.abspath(cli["cache_dir"])
    for key in ("timeout", "memory_limit"):
        if cli.get(key) is not None:
            setattr(s, key, cli[key])
    select = cli.get("select")
    return {"select": None if select is None else _split(select), "ignore": _split(cli.get("ignore") or []),
            "extend_select": _split(cli.get("extend_select") or []), "where": "command line: "}


def _split(values) -> list[str]:
    # `--select CP1,CP2 --select CP3` arrives as ["CP1,CP2", "CP3"].
    if isinstance(values, str):
        values = [values]
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _select(layers: list[dict]) -> tuple[set, set, set]:
    """Fold layers into (enabled, ignored, extend_selected) code sets, ruff's way."""
    enabled: set[str] = set()
    ignored: set[str] = set()
    extended: set[str] = set()
    for layer in layers:
        where = layer.get("where", "")
        sel = [(s, True) for s in (layer.get("select") or []) + layer.get("extend_select", [])]
        ign = [(s, False) for s in layer.get("ignore", [])]
        updates: dict[str, bool] = {}
        # Less specific first, so the more specific selector has the last word; ignore wins ties.
        for selector, on in sorted(sel + ign, key=lambda x: (_specificity(x[0]), x[1] is False)):
            for code in _resolve([selector], where):
                updates[code] = on
        extended |= _resolve(layer.get("extend_select", []), where)
        if layer.get("select") is not None:
            enabled = {c for c, on in updates.items() if on}
        else:
            enabled |= {c for c, on in updates.items() if on}
            enabled -= {c for c, on in updates.items() if not on}
        ignored = (ignored | {c for c, on in updates.items() if not on}) - enabled
    return enabled, ignored, extended & enabled


def _specificity(selector: str) -> int:
    sel = selector.strip()
    if sel.upper() == "ALL":
        return 0
    if sel in registry.BY_NAME or sel.upper() in registry.RULES:
        return 100
    return len(sel)


def _resolve(selectors, where: str) -> set[str]:
    codes: set[str] = set()
    for sel in selectors:
        try:
            codes |= registry.resolve(sel)
        except registry.UnknownCode as exc:
            raise ConfigError(f"{where}{exc}") from None
    return codes


def _get(t: dict, key: str, kind, where: str, default):
    if key not in t:
        return default
    value = t[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise ConfigError(f"{where}{key}: expected {names}, got {type(value).__name__}")
    return value


def _limit(t: dict, key: str, kind, where: str, default, unit: str):
    """timeout / memory-limit: a number >= 0 (0 turns the limit off); a bool is not a number."""
    value = _get(t, key, kind, where, default)
    if isinstance(value, bool) or not 0 <= value < float("inf"):
        raise ConfigError(f"{where}{key}: expected {unit} >= 0 (0: no limit), got {value!r}")
    return value


def _strs(t: dict, key: str, where: str) -> list[str] | None:
    value = _get(t, key, list, where, None)
    if value is not None and not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}{key}: expected a list of strings")
    return value


def _launch(table: dict, where: str) -> dict:
    """[tool.cuport.launch] kernel = { block = [x, y, z] }; missing dimensions are 1."""
    out = {}
    for kernel, spec in table.items():
        block = spec.get("block") if isinstance(spec, dict) else None
        if isinstance(block, int) and not isinstance(block, bool):
            block = [block]
        ok = isinstance(block, list) and 1 <= len(block) <= 3 and all(
            isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)
        if not ok:
            raise ConfigError(f"{where}launch.{kernel}: expected {{ block = [x, y, z] }} with positive integers")
        out[kernel] = {**spec, "block": block + [1] * (3 - len(block))}
    return out
