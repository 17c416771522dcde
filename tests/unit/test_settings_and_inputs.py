"""Configuration and input errors: one line, naming what is wrong and where."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ethos.domain import inputs
from ethos.domain.errors import ConfigError, InputError
from ethos.domain.inputs import MemoryInput
from ethos.settings import DecaySettings, load_settings


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
        ("[embedding]\nprovider = 'local'\ndimension = 768\n", "dimension: 384 with provider"),
        ("[embedding]\nprovider = 'local'\nquery_prefix = 'q: '\n", "query_prefix: leave it"),
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[policies.working]\nbase_tau_days = 1.0\nlifetime = '8h'\n",
            "policies.working: give lifetime or base_tau_days, not both",
        ),
        (
            "[policies.a]\npromote_after = 2\npromote_to = 'b'\n"
            "[policies.b]\npromote_after = 2\npromote_to = 'a'\n",
            "promotion cycle a -> b -> a",
        ),
        (
            "[policies.x]\npromote_after = 2\npromote_to = 'nope'\n",
            "policies.x.promote_to: unknown policy 'nope'",
        ),
        ("[policies.x]\npromote_to = 'standard'\n", "promote_after and promote_to go together"),
        ("[policies.x]\nlifetime = 'soon'\n", "policies.x.lifetime: bad duration 'soon'"),
        ("[policies.x]\ncurve = 'linear'\n", "policies.x.curve"),
        ("[policies.x]\nlifetime = '200y'\n", "policies.x.lifetime: τ of"),
        ("[policies.Loud]\nlifetime = '1d'\n", "policies.Loud: a policy name is lower case"),
        ("[decay]\ndefault_policy = 'nope'\n", "decay.default_policy: unknown policy 'nope'"),
        (
            "[decay]\nbase_tau_days = 5.0\n[policies.standard]\nbase_tau_days = 6.0\n",
            "policies.standard.base_tau_days: given twice, as decay.base_tau_days too",
        ),
        ("[importance]\ntiers = { nope = 0.5 }\n", "importance.tiers.nope: unknown policy"),
        ("[importance]\ntiers = { working = 1.5 }\n", "importance.tiers"),
    ],
)
def test_bad_policies_name_key_and_file(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert str(err.value).startswith(f"{path}: ")
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_policies_merge_over_the_shipped_ones(tmp_path: Path) -> None:
    settings = load_settings(
        write(tmp_path, "[policies.working]\nlifetime = '2h'\n[policies.fsrs]\ncurve = 'power'\n")
    )
    policies = settings.policy_table
    assert set(policies) == {"standard", "working", "long_term", "permanent", "fsrs"}
    assert policies["working"].lifetime_days == pytest.approx(2 / 24)
    assert policies["working"].promote_to == "standard"  # kept from the shipped policy
    assert policies["fsrs"].params.curve == "power"
    assert policies["fsrs"].params.base_tau_days == 7.0  # standard's


def test_decay_keys_mean_the_standard_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETHOS_DECAY__BASE_TAU_DAYS", "14")
    policies = load_settings(None).policy_table
    assert policies["standard"].params.base_tau_days == 14
    assert policies["permanent"].params.base_tau_days == 14  # inherited
    assert policies["working"].lifetime_days == pytest.approx(1 / 3)  # its own lifetime


def test_a_bad_policy_from_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ETHOS_POLICIES__WORKING__PROMOTE_TO", "nowhere")
    with pytest.raises(ConfigError) as err:
        load_settings(None)
    assert "ETHOS_POLICIES__WORKING__PROMOTE_TO" in str(err.value)
    assert "unknown policy 'nowhere'" in str(err.value)


def test_explicit_arguments_win_over_the_environment_which_wins_over_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "[search]\ncandidates = 30\n[decay]\nbase_tau_days = 10\n")
    monkeypatch.setenv("ETHOS_SEARCH__CANDIDATES", "40")
    monkeypatch.setenv("ETHOS_DECAY__BASE_TAU_DAYS", "12")
    loaded = load_settings(path, search={"candidates": 50})
    assert loaded.search.candidates == 50  # argument over environment
    assert loaded.decay.base_tau_days == 12  # environment over file


def test_an_env_value_that_breaks_a_policy_names_the_variable_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "[decay]\nfrequency_weight = 0.3\n")
    monkeypatch.setenv("ETHOS_DECAY__BASE_TAU_DAYS", "5000")
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    message = str(err.value)
    assert message.startswith("environment variable ETHOS_DECAY__BASE_TAU_DAYS: ")
    assert str(path) not in message


def test_an_unknown_section_in_the_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETHOS_DECAYY__X", "1")
    with pytest.raises(ConfigError) as err:
        load_settings(None)
    assert str(err.value).startswith("environment variable ETHOS_DECAYY__X: unknown section")


@pytest.mark.parametrize("name", ["ETHOS_VENV", "ETHOS_BIN", "ETHOS_VERSION"])
def test_a_variable_naming_no_section_is_only_warned_of(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A user's own ETHOS_VENV is no typo of a setting (no ``__``): named, not fatal."""
    monkeypatch.setenv(name, "1")
    with pytest.warns(UserWarning, match=f"^environment variable {name} names no section"):
        assert load_settings(None).decay.base_tau_days == DecaySettings().base_tau_days


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "content must not be empty"),
        (" \n\t ", "content must not be empty"),
        ("caf\udcff\udcfe secret", "content is not valid UTF-8 text"),
        ("a\x00b", "content must not contain NUL characters"),
        ("x" * 262_145, "content is 262,145 bytes: at most 262,144 are stored"),
    ],
)
def test_content_postgresql_cannot_store_or_index_is_one_line(content: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        MemoryInput.build("fact", 4, agent_id="a", content=content)
    assert str(err.value) == message  # one line, and none of the content echoed


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("e\u0301ve", "agent_id is not in Unicode NFC: send it NFC-normalised"),
        ("eve\u202etxt.exe", "agent_id holds U+202E, a character that does not show"),
        ("e\u200bve", "agent_id holds U+200B, a character that does not show"),
        ("eve\x1b[2J", "agent_id holds U+001B, a character that does not show"),
    ],
)
def test_an_agent_id_is_written_one_way_only(agent: str, message: str) -> None:
    """An NFD twin, a right-to-left override or a zero-width space would make a second
    agent that looks like the first: refused, one line, the id not echoed."""
    with pytest.raises(InputError) as err:
        inputs.agent_id(agent)
    assert str(err.value).startswith(message) and agent not in str(err.value)
    assert inputs.agent_id("\u00e9ve") == "\u00e9ve"  # NFC, and any script, is fine


@pytest.mark.parametrize("content", ["\u200b\u200c\u200d", " \ufeff\u2060 \u00a0", "\u202e\n"])
def test_content_of_unseen_characters_is_empty(content: str) -> None:
    with pytest.raises(InputError) as err:
        MemoryInput.build("fact", 4, agent_id="a", content=content)
    assert str(err.value) == "content must not be empty"
    assert MemoryInput.build("fact", 4, agent_id="a", content="\u200bx").content == "\u200bx"


@pytest.mark.parametrize(
    "values",
    [[1e-30, 0.0, 0.0, 0.0], [1e-23, -1e-23, 0.0, 0.0], [1e20, 1.0, 0.0, 0.0], [1e39, 0, 0, 0]],
)
def test_an_embedding_without_a_float32_norm_is_refused(values: list[float]) -> None:
    """pgvector sums squares in float32: 1e-30 squares to 0 there (cosine divides by
    0, as for the zero vector) and 1e20 to infinity."""
    with pytest.raises(InputError, match=r"^embedding is all zeros, or as good as"):
        inputs.embedding(values, 4)
    assert inputs.embedding([1e-15, 0, 0, 0], 4) == [1e-15, 0.0, 0.0, 0.0]
