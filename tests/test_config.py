"""Config discovery, selection (ruff's precedence), per-file-ignores, errors, hash and show."""

import os
import pytest

from porter.config import ConfigError, Settings, find_config, load_settings, path_matches
from porter.lint.registry import RULES

ALL = set(RULES)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- discovery ------------------------------------------------------------------------------------
def test_closest_config_wins(tmp_path):
    write(tmp_path / ".git" / "HEAD", "")
    write(tmp_path / "cuport.toml", 'select = ["CP1"]\n')
    write(tmp_path / "a" / "b" / ".cuport.toml", 'select = ["CP4"]\n')
    (tmp_path / "a" / "b" / "c").mkdir()
    assert find_config(tmp_path / "a" / "b" / "c") == str(tmp_path / "a" / "b" / ".cuport.toml")
    assert find_config(tmp_path / "a") == str(tmp_path / "cuport.toml")
    assert load_settings(str(tmp_path / "a" / "b" / "c")).enabled_codes("x.cu") == {"CP401", "CP402"}


def test_pyproject_without_tool_cuport_is_skipped(tmp_path):
    write(tmp_path / ".git" / "HEAD", "")
    write(tmp_path / "pyproject.toml", '[tool.cuport]\nignore = ["CP401"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "x"  # not cuport\n[tool.ruff]\nselect = ["E"]\n')
    assert find_config(tmp_path / "pkg") == str(tmp_path / "pyproject.toml")
    s = load_settings(str(tmp_path / "pkg"))
    assert s.config_path == str(tmp_path / "pyproject.toml")
    assert s.enabled_codes("k.cu") == ALL - {"CP401"}


def test_same_directory_order(tmp_path):
    write(tmp_path / ".git" / "HEAD", "")
    write(tmp_path / "pyproject.toml", "[tool.cuport]\n")
    write(tmp_path / "cuport.toml", "")
    assert find_config(tmp_path) == str(tmp_path / "cuport.toml")
    write(tmp_path / ".cuport.toml", "")
    assert find_config(tmp_path) == str(tmp_path / ".cuport.toml")


def test_search_stops_at_repository_root(tmp_path):
    write(tmp_path / "cuport.toml", 'select = ["CP1"]\n')
    write(tmp_path / "repo" / ".git" / "HEAD", "")
    (tmp_path / "repo" / "src").mkdir()
    assert find_config(tmp_path / "repo" / "src") is None
    s = load_settings(str(tmp_path / "repo" / "src"))
    assert s.config_path is None and s.enabled_codes("k.cu") == ALL
    assert s.root == str(tmp_path / "repo" / "src")


def test_explicit_config_and_isolated(tmp_path):
    write(tmp_path / ".git" / "HEAD", "")
    write(tmp_path / "cuport.toml", 'select = ["CP1"]\n')
    other = write(tmp_path / "conf" / "other.toml", 'select = ["CP5"]\n')
    assert load_settings(str(tmp_path), config_path=str(other)).enabled_codes("k.cu") == {"CP501", "CP502"}
    assert load_settings(str(tmp_path), isolated=True).enabled_codes("k.cu") == ALL
    with pytest.raises(ConfigError, match="--isolated"):
        load_settings(str(tmp_path), config_path=str(other), isolated=True)
    with pytest.raises(ConfigError, match="not found"):
        load_settings(str(tmp_path), config_path=str(tmp_path / "missing.toml"))
    pyproject = write(tmp_path / "p" / "pyproject.toml", "[project]\nname = 'x'\n")
    with pytest.raises(ConfigError, match=r"no \[tool.cuport\] table"):
        load_settings(str(tmp_path), config_path=str(pyproject))


# -- selection ------------------------------------------------------------------------------------
def settings(tmp_path, toml, cli=None):
    write(tmp_path / ".git" / "HEAD", "")
    write(tmp_path / "cuport.toml", toml)
    return load_settings(str(tmp_path), cli=cli)


def test_default_is_all_rules(tmp_path):
    assert settings(tmp_path, "").enabled_codes("k.cu") == ALL
    assert Settings().enabled_codes("k.cu") == ALL
    assert {"CP001", "CP002"} <= Settings().enabled_codes("k.cu")


@pytest.mark.parametrize("toml, expected", [
    ('select = ["CP1"]\nignore = ["CP101"]\n', {"CP102", "CP103", "CP104", "CP105", "CP106"}),
    ('select = ["CP101"]\nignore = ["CP1"]\n', {"CP101"}),                       # more specific wins
    ('ignore = ["CP1"]\nextend-select = ["CP101"]\n', ALL - {"CP102", "CP103", "CP104", "CP105", "CP106"}),
    ('select = ["warp-size-constant", "CP20"]\n', {"CP101", "CP201", "CP202", "CP203"}),
    ('select = ["CP4"]\nextend-select = ["CP501"]\n', {"CP401", "CP402", "CP501"}),
    ('ignore = ["CP4", "shared-over-amd-lds"]\n', ALL - {"CP401", "CP402", "CP502"}),
])
def test_select_ignore_extend(tmp_path, toml, expected):
    assert settings(tmp_path, toml).enabled_codes("k.cu") == expected


def test_cli_overrides(tmp_path):
    toml = 'select = ["CP1", "CP4"]\nignore = ["CP401"]\n'
    # --ignore and --extend-select apply on top of the file.
    s = settings(tmp_path, toml, cli={"ignore": ["CP101,CP102"], "extend_select": ["CP501"]})
    assert s.enabled_codes("k.cu") == {"CP103", "CP104", "CP105", "CP106", "CP402", "CP501"}
    # --select starts over: the file's ignore no longer applies.
    s = settings(tmp_path, toml, cli={"select": ["CP4"]})
    assert s.enabled_codes("k.cu") == {"CP401", "CP402"}
    s = settings(tmp_path, toml, cli={"select": None, "ignore": None, "target_arch": ["gfx942"]})
    assert s.target_arch == ["gfx942"]
    with pytest.raises(ConfigError, match=r"command line: unknown rule code or name 'CP99' "):
        settings(tmp_path, toml, cli={"select": ["CP99"]})


def test_unknown_code_names_the_closest(tmp_path):
    with pytest.raises(ConfigError) as exc:
        settings(tmp_path, 'select = ["CP1011"]\n')
    assert "unknown rule code or name 'CP1011'" in str(exc.value)
    assert "did you mean CP101?" in str(exc.value)
    assert str(tmp_path / "cuport.toml") in str(exc.value)
    with pytest.raises(ConfigError, match="did you mean warp-size-constant"):
        settings(tmp_path, 'ignore = ["warp-size-constnt"]\n')
    with pytest.raises(ConfigError, match="per-file-ignores.*did you mean CP401"):
        settings(tmp_path, '[per-file-ignores]\n"*.cu" = ["CP4011"]\n')


def test_unknown_key_and_bad_types(tmp_path):
    with pytest.raises(ConfigError, match="unknown key 'extend_select'.*did you mean 'extend-select'"):
        settings(tmp_path, 'extend_select = ["CP1"]\n')
    with pytest.raises(ConfigError, match="select: expected list"):
        settings(tmp_path, 'select = "CP1"\n')
    with pytest.raises(ConfigError, match="vulkan-max-shared: expected int"):
        settings(tmp_path, 'vulkan-max-shared = "32k"\n')
    with pytest.raises(ConfigError, match="invalid TOML"):
        settings(tmp_path, 'select = [\n')
    with pytest.raises(ConfigError, match="launch.reduce"):
        settings(tmp_path, '[launch]\nreduce = { block = [0] }\n')


def test_broken_pyproject_mentioning_cuport_is_an_error(tmp_path):
    write(tmp_path / ".git" / "HEAD", "")
    write(tmp_path / "pyproject.toml", "[tool.cuport\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        find_config(tmp_path)


# -- per-file-ignores, exclude --------------------------------------------------------------------
def test_per_file_ignores(tmp_path):
    s = settings(tmp_path, '[per-file-ignores]\n'
                           '"kernels/*.cu" = ["CP1"]\n'
                           '"*.cuh" = ["CP401"]\n'
                           '"tests/**" = ["shared-over-amd-lds"]\n'
                           '"legacy" = ["CP2"]\n')
    cp1 = {c for c in ALL if c.startswith("CP1")}
    assert s.enabled_codes(str(tmp_path / "kernels" / "a.cu")) == ALL - cp1
    assert s.enabled_codes(str(tmp_path / "kernels" / "sub" / "a.cu")) == ALL   # `*` stays in a directory
    assert s.enabled_codes(str(tmp_path / "deep" / "x" / "util.cuh")) == ALL - {"CP401"}  # base name
    assert s.enabled_codes(str(tmp_path / "tests" / "a" / "b.cu")) == ALL - {"CP502"}
    assert s.enabled_codes(str(tmp_path / "legacy" / "old.cu")) == ALL - {"CP201", "CP202", "CP203"}
    assert s.enabled_codes(str(tmp_path / "main.cu")) == ALL


def test_per_file_ignores_relative_to_config_dir(tmp_path, monkeypatch):
    s = settings(tmp_path, '[per-file-ignores]\n"kernels/*.cu" = ["CP1"]\n')
    (tmp_path / "kernels").mkdir()
    monkeypatch.chdir(tmp_path / "kernels")
    assert "CP101" not in s.enabled_codes("a.cu")
    assert "CP101" in s.enabled_codes("../a.cu")


def test_exclude(tmp_path):
    s = settings(tmp_path, 'extend-exclude = ["third_party/*.cu"]\n')
    assert s.is_excluded(str(tmp_path / "build" / "gen.cu"))
    assert s.is_excluded(str(tmp_path / "src" / "node_modules" / "x.cu"))
    assert s.is_excluded(str(tmp_path / "third_party" / "a.cu"))
    assert not s.is_excluded(str(tmp_path / "src" / "builder.cu"))
    s = settings(tmp_path, 'exclude = ["gen"]\n')
    assert s.exclude == ["gen"] and not s.is_excluded(str(tmp_path / "build" / "x.cu"))


def test_path_matches():
    assert path_matches("**/*.cu", "a.cu") and path_matches("**/*.cu", "a/b/c.cu")
    assert path_matches("src/[ab].cu", "src/a.cu") and not path_matches("src/[!ab].cu", "src/a.cu")
    assert not path_matches("*.cu", "a.cuh")


# -- other settings -------------------------------------------------------------------------------
def test_all_fields(tmp_path):
    s = settings(tmp_path, '''
target-arch = ["sm_80", "gfx942"]
vulkan-max-shared = 65536
include-dirs = ["include"]
defines = ["USE_FAST=1", "NDEBUG"]
extra-args = ["-std=c++17"]
cache-dir = "out/cache"

[launch]
reduce = { block = [256] }
transpose.block = [32, 8, 1]

[verify]
tolerance = 1e-5
''')
    assert s.target_arch == ["sm_80", "gfx942"]
    assert s.vulkan_max_shared == 65536
    assert s.include_dirs == [str(tmp_path / "include")]
    assert s.defines == ["USE_FAST=1", "NDEBUG"]
    assert s.extra_args == ["-std=c++17"]
    assert s.cache_dir == str(tmp_path / "out" / "cache")
    assert s.launch == {"reduce": {"block": [256, 1, 1]}, "transpose": {"block": [32, 8, 1]}}
    assert s.raw["verify"] == {"tolerance": 1e-5}


def test_defaults():
    s = Settings()
    assert s.target_arch == ["sm_90", "gfx90a", "gfx1030", "vulkan"]
    assert s.exclude == [".git", ".venv", "build", "dist", "node_modules", ".cuport_cache"]
    assert s.vulkan_max_shared == 32768 and s.launch == {}


def test_defines_as_table(tmp_path):
    assert settings(tmp_path, '[defines]\nBLOCK = 256\n').defines == ["BLOCK=256"]


def test_hash_is_stable_and_sensitive(tmp_path):
    a = settings(tmp_path, 'select = ["CP1", "CP4"]\n')
    b = settings(tmp_path, 'select = ["CP4", "CP1"]\n')
    assert a.hash() == b.hash() and len(a.hash()) == 16
    assert settings(tmp_path, 'select = ["CP1"]\n').hash() != a.hash()
    assert settings(tmp_path, 'select = ["CP1", "CP4"]\ntarget-arch = ["sm_80"]\n').hash() != a.hash()
    assert Settings().hash() == Settings().hash()


def test_show(tmp_path):
    text = settings(tmp_path, 'ignore = ["CP401"]\n[per-file-ignores]\n"*.cuh" = ["CP1"]\n').show()
    assert f'config             = "{tmp_path / "cuport.toml"}"' in text
    assert '"CP401"' in text.split("ignored")[1].splitlines()[0]
    assert 'per-file-ignores   = {"*.cuh": ["CP101"' in text
    assert "settings-hash" in text


@pytest.mark.parametrize("pattern", ["third_party/*.cu", "src/**/gen_*.cu", "*.cuh", "legacy/old.cu", "kern?ls/*"])
def test_exclude_and_per_file_ignores_match_the_same_paths(tmp_path, pattern):
    """One glob matcher (config.path_matches) for both keys, and lint's directory walk uses it too: `*` stays in a
    directory (third_party/*.cu does not reach third_party/sub/x.cu), `**` crosses them."""
    from porter.lint.files import discover
    rels = ["third_party/a.cu", "third_party/sub/x.cu", "src/gen_a.cu", "src/deep/er/gen_b.cu", "src/main.cu",
            "inc/k.cuh", "legacy/old.cu", "legacy/new.cu", "kernels/k.cu", "kernels/d/k.cu"]
    for r in rels:
        write(tmp_path / r, "__global__ void k() {}\n")
    s = settings(tmp_path, f'exclude = ["{pattern}"]\n[per-file-ignores]\n"{pattern}" = ["CP101"]\n')
    excluded = {r for r in rels if s.is_excluded(str(tmp_path / r))}
    ignored = {r for r in rels if "CP101" not in s.enabled_codes(str(tmp_path / r))}
    assert excluded == ignored and 0 < len(excluded) < len(rels)
    walked = {os.path.relpath(p, tmp_path).replace(os.sep, "/")
              for p, err in discover([str(tmp_path)], s.is_excluded) if err is None}
    assert walked == set(rels) - excluded
    if pattern == "third_party/*.cu":
        assert excluded == {"third_party/a.cu"}
