"""Configuration and input errors: one line, naming what is wrong and where."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ethos import inputs
from ethos.errors import ConfigError, InputError
from ethos.inputs import MemoryInput
from ethos.settings import load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ethos.toml"
    path.write_text(text)
    return path


def test_repository_ethos_toml_holds_the_defaults() -> None:
    from ethos.settings import Settings

    root = Path(__file__).resolve().parents[2]
    loaded = load_settings(root / "ethos.toml")
    assert loaded.model_dump(exclude={"config_path"}) == Settings().model_dump(
        exclude={"config_path"}
    )


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "[decay]\nbase_tau_days = 10\n")
    assert load_settings(path).decay.base_tau_days == 10
    monkeypatch.setenv("ETHOS_DECAY__BASE_TAU_DAYS", "14")
    assert load_settings(path).decay.base_tau_days == 14


def test_bad_env_value_names_the_key_and_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETHOS_DECAY__BASE_TAU_DAYS", "-1")
    with pytest.raises(ConfigError) as err:
        load_settings(None)
    message = str(err.value)
    assert "decay.base_tau_days" in message and "ETHOS_DECAY__BASE_TAU_DAYS" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[decay]\nprune_threshold = 1.5\n", "decay.prune_threshold"),
        ("[decay]\nprune_threshold = 0\n", "decay.prune_threshold"),
        ("[decay]\nprune_treshold = 0.1\n", "unknown key decay.prune_treshold"),
        ("[decay\n", "invalid TOML"),
        ("[embedding]\ndimension = 'big'\n", "embedding.dimension"),
    ],
)
def test_bad_file_value_names_key_and_file(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert expected in str(err.value)
    assert str(path) in str(err.value)


def test_relative_data_dir_resolves_against_the_config_folder(tmp_path: Path) -> None:
    path = write(tmp_path, "[database]\ndata_dir = 'state/pg'\n")
    assert load_settings(path).data_dir == tmp_path / "state" / "pg"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1.0, 2.0, 3.0], "3 dimensions, expected 4"),
        ([1.0, math.nan, 0.0, 0.0], "NaN"),
        ([], "non-empty"),
        ("[1, 2", "not valid JSON"),
        ([1, "a", 2, 3], "numbers only"),
    ],
)
def test_embedding_errors(values: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        inputs.embedding(values, 4)


def test_memory_input_rejects_fields_of_another_table() -> None:
    with pytest.raises(InputError, match="emotional_tone applies to episodic_traces only"):
        MemoryInput.build("fact", 4, agent_id="a", content="c", emotional_tone=0.5)
    with pytest.raises(InputError, match="salience must be between 0 and 1"):
        MemoryInput.build("episode", 4, agent_id="a", content="c", salience=math.nan)
    with pytest.raises(InputError, match="needs an embedding"):
        MemoryInput.build("vector", 4, agent_id="a", content="c")


@pytest.mark.parametrize("value", ["2026-13-01T00:00:00Z", "yesterday", "2026-01-01T00:00:00"])
def test_bad_timestamps(value: str) -> None:
    with pytest.raises(InputError, match="bad time"):
        inputs.parse_time(value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ethos:s3cret@db:5432/ethos", "postgresql://ethos:***@db:5432/ethos"),
        (
            "postgresql://postgres:@/ethos?host=/tmp/x",
            "postgresql://postgres:***@/ethos?host=/tmp/x",
        ),
        ("postgresql:///ethos", "postgresql:///ethos"),
    ],
)
def test_urls_in_logs_never_show_a_password(url: str, shown: str) -> None:
    from ethos.logs import redact

    assert redact(url) == shown
