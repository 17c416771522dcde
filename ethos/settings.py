"""Settings: ethos.toml, then ETHOS_* environment variables (``__`` between sections).

Every key is documented with its default in the repository's ethos.toml.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from ethos.decay import DecayParams
from ethos.errors import ConfigError
from ethos.tables import TableSpec

ENV_PREFIX = "ETHOS_"
CONFIG_ENV = "ETHOS_CONFIG"
DEFAULT_CONFIG_NAME = "ethos.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DatabaseSettings(_Section):
    url: str = ""
    data_dir: Path = Path(".ethos/pgdata")
    pool_min_size: int = Field(default=1, ge=0)
    pool_max_size: int = Field(default=10, ge=1)
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    index_build_memory: str = Field(default="1GB", pattern=r"^\d+\s*(kB|MB|GB)$")


class DecaySettings(_Section):
    base_tau_days: float = Field(default=7.0, gt=0)
    ltp_multiplier: float = Field(default=1.5, ge=1)
    max_tau_days: float = Field(default=3650.0, gt=0)
    frequency_weight: float = Field(default=0.3, ge=0)
    emotional_weight: float = Field(default=0.2, ge=0)
    prune_threshold: float = Field(default=0.05, gt=0, lt=1)
    batch_size: int = Field(default=500, ge=1, le=100_000)
    refresh_tolerance: float = Field(default=0.01, ge=0, lt=1)


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

    def boost(self, spec: TableSpec) -> float:
        """The boost its TableSpec names for a table's retrievals."""
        value = getattr(self, spec.ltp_boost, None)
        if not isinstance(value, float):
            raise ConfigError(f"table {spec.name}: ltp.{spec.ltp_boost} is not a setting")
        return value


class SearchSettings(_Section):
    salience_weight: float = Field(default=1.0, ge=0)
    candidates: int = Field(default=40, ge=1, le=1000)
    max_scan_tuples: int = Field(default=2000, ge=100)


class ConsolidationSettings(_Section):
    interval_seconds: float = Field(default=900.0, gt=0)
    jitter: float = Field(default=0.1, ge=0, lt=1)
    idle_seconds: float = Field(default=60.0, ge=0)
    max_defer_seconds: float = Field(default=3600.0, ge=0)
    standby_poll_seconds: float = Field(default=5.0, gt=0)
    heartbeat_seconds: float = Field(default=5.0, gt=0)
    shutdown_timeout_seconds: float = Field(default=10.0, gt=0)
    retry_max_seconds: float = Field(default=30.0, gt=0)


class EmbeddingSettings(_Section):
    dimension: int = Field(default=384, ge=1, le=16_000)


class RecoverySettings(_Section):
    salience: float = Field(default=0.1, gt=0, le=1)


class MonitoringSettings(_Section):
    at_risk_margin: float = Field(default=0.05, ge=0, le=1)


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
    ltp: LtpSettings = LtpSettings()
    search: SearchSettings = SearchSettings()
    consolidation: ConsolidationSettings = ConsolidationSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    recovery: RecoverySettings = RecoverySettings()
    monitoring: MonitoringSettings = MonitoringSettings()
    logging: LoggingSettings = LoggingSettings()

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
        # The file's values arrive as init arguments; the environment overrides them.
        return env_settings, init_settings

    @model_validator(mode="after")
    def _pool_sizes(self) -> Settings:
        if self.database.pool_min_size > self.database.pool_max_size:
            raise ValueError("database.pool_min_size must not exceed database.pool_max_size")
        return self

    @property
    def base_dir(self) -> Path:
        return self.config_path.parent if self.config_path else Path.cwd()

    @property
    def decay_params(self) -> DecayParams:
        d = self.decay
        return DecayParams(
            base_tau_days=d.base_tau_days,
            ltp_multiplier=d.ltp_multiplier,
            max_tau_days=d.max_tau_days,
            frequency_weight=d.frequency_weight,
            emotional_weight=d.emotional_weight,
            prune_threshold=d.prune_threshold,
        )

    @property
    def data_dir(self) -> Path:
        path = self.database.data_dir.expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()


def find_config(explicit: str | Path | None = None) -> Path | None:
    """--config, then $ETHOS_CONFIG, then ./ethos.toml if it exists."""
    if explicit:
        return Path(explicit)
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    local = Path.cwd() / DEFAULT_CONFIG_NAME
    return local if local.is_file() else None


def load_settings(config: str | Path | None = None, **overrides: Any) -> Settings:
    """Load and validate settings; a bad value raises ConfigError naming key and source."""
    path = find_config(config)
    data: dict[str, Any] = {}
    if path is not None:
        path = path.resolve()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: config file not found") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    for section, values in overrides.items():
        data.setdefault(section, {}).update(values)
    try:
        return Settings(**data, config_path=path)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None


def _describe(exc: ValidationError, path: Path | None) -> str:
    error = exc.errors()[0]
    key = ".".join(str(part) for part in error["loc"]) or "settings"
    env_name = ENV_PREFIX + key.upper().replace(".", "__")
    if env_name in os.environ:
        source = f"environment variable {env_name}"
    elif path is not None:
        source = str(path)
    else:
        source = "defaults"
    if error["type"] == "extra_forbidden":
        return f"{source}: unknown key {key}"
    value = error.get("input")
    shown = "" if isinstance(value, dict) else f" (got {value!r})"
    message = error["msg"][0].lower() + error["msg"][1:]
    return f"{source}: {key}: {message}{shown}"
