"""action/cache_path.py: the embedding cache folders of the pipeline files, and the cache key."""

from __future__ import annotations

from pathlib import Path

from ._pipelines import invalid_pipeline, valid_pipeline
from .conftest import run_script


def _outputs(env: dict[str, str]) -> dict[str, str]:
    """$GITHUB_OUTPUT, multi-line values (name<<DELIMITER ... DELIMITER) included."""
    lines = iter(Path(env["GITHUB_OUTPUT"]).read_text().splitlines())
    found: dict[str, str] = {}
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            value = []
            for inner in lines:
                if inner == delimiter:
                    break
                value.append(inner)
            found[name] = "\n".join(value)
        else:
            name, value_text = line.split("=", 1)
            found[name] = value_text
    return found


def test_the_path_is_relative_to_each_file_and_defaults_when_the_block_is_empty(
    tmp_path, github_env
):
    first = valid_pipeline(
        tmp_path / "pipelines", "a.yaml", cache="embedding_cache: {path: ../.cache/vectors}"
    )
    second = valid_pipeline(tmp_path / "other", "b.yaml", cache="embedding_cache: {}")
    done = run_script(
        "cache_path.py", "pipelines/a.yaml", "other/b.yaml", env=github_env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    found = _outputs(github_env)
    assert found["enabled"] == "true"
    assert found["paths"].splitlines() == [
        str((tmp_path / ".cache" / "vectors").resolve()),
        str((tmp_path / "other" / ".cache" / "embeddings").resolve()),
    ]
    assert found["restore-key"] == "ragflow-config-embeddings-Linux-"
    assert found["key"].startswith("ragflow-config-embeddings-Linux-")
    assert len(found["key"]) > len(found["restore-key"]) + 16
    assert first.exists() and second.exists()


def test_an_environment_variable_in_the_path_is_expanded(tmp_path, github_env):
    valid_pipeline(tmp_path, cache='embedding_cache: {path: "${CACHE_DIR}"}')
    env = {**github_env, "CACHE_DIR": str(tmp_path / "from-env")}
    done = run_script("cache_path.py", "kb.yaml", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _outputs(env)["paths"] == str(tmp_path / "from-env")


def test_the_key_follows_the_files_content(tmp_path, github_env):
    file = valid_pipeline(tmp_path, cache="embedding_cache: {}")
    keys = []
    for chunk_size in (256, 256, 128):
        valid_pipeline(tmp_path, chunk_size=chunk_size, cache="embedding_cache: {}")
        Path(github_env["GITHUB_OUTPUT"]).write_text("")
        done = run_script("cache_path.py", str(file), env=github_env)
        assert done.returncode == 0, done.stderr
        keys.append(_outputs(github_env)["key"])
    assert keys[0] == keys[1] != keys[2]


def test_no_cache_without_the_block_or_when_the_file_is_unreadable(tmp_path, github_env):
    valid_pipeline(tmp_path)
    invalid = tmp_path / "syntax.yaml"
    invalid.write_text("version: [1\n")
    done = run_script("cache_path.py", "kb.yaml", "syntax.yaml", env=github_env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "no embedding cache for syntax.yaml" in done.stderr
    found = _outputs(github_env)
    assert found["enabled"] == "false"
    assert found["paths"] == ""


def test_a_missing_file_only_has_no_cache_so_the_report_still_comes(tmp_path, github_env):
    invalid_pipeline(tmp_path)
    done = run_script("cache_path.py", "broken.yaml", "nowhere.yaml", env=github_env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning: no such pipeline file: nowhere.yaml" in done.stderr
    assert _outputs(github_env)["enabled"] == "false"
    usage = run_script("cache_path.py", env=github_env, cwd=tmp_path)
    assert usage.returncode == 2
    assert "usage: cache_path.py FILE" in usage.stderr
