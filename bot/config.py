"""Settings and the routing file: the only place that reads the environment.

`load_settings(environ)` is called once at start-up (by `trainmedic serve` / `demo`); everything else receives
the resulting objects. A missing or invalid value raises ConfigError naming the setting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bot.errors import ConfigError

DEFAULT_SLACK_API_URL = "https://slack.com/api/"
SettingsT = TypeVar("SettingsT", bound=BaseModel)


class Settings(BaseModel):
    """Environment settings (names are fixed: see README "Settings"), validated from the one mapping given: pydantic
    turns the strings into their types ("true" -> True, "8080" -> 8080), nothing else is read."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    SLACK_BOT_TOKEN: str = Field(min_length=1)
    SLACK_SIGNING_SECRET: str = Field(min_length=1)
    SLACK_API_URL: str = DEFAULT_SLACK_API_URL
    TRAINMEDIC_CONFIG: str | None = None
    TRAINMEDIC_STORE: str = "sqlite:///.trainmedic/state.db"
    VERTEX_API_ENDPOINT: str | None = None
    LOGGING_API_ENDPOINT: str | None = None
    QUOTAS_API_ENDPOINT: str | None = None  # Cloud Quotas (a quota's id the tables lack); tests: the stand-in
    PUBSUB_VERIFY_TOKEN: bool = True
    PUBSUB_PUSH_AUDIENCE: str | None = None
    PUBSUB_PUSH_SERVICE_ACCOUNT: str | None = None
    PORT: int = Field(default=8080, ge=1, le=65535)
    GOOGLE_CLOUD_PROJECT: str | None = None  # the project to use when a job reference names none
    TRAINMEDIC_KNOWLEDGE: str | None = None  # override the knowledge directory
    OIDC_CERTS_URL: str = "https://www.googleapis.com/oauth2/v1/certs"
    # POST /tasks/scan (stuck jobs), called by Cloud Scheduler with an OIDC token of its own service account
    SCHEDULER_SERVICE_ACCOUNT: str | None = None  # unset while verifying tokens: the scan answers 403
    SCHEDULER_AUDIENCE: str | None = None  # default: PUBSUB_PUSH_AUDIENCE (the service URL)
    STUCK_QUEUED_MINUTES: float = Field(default=30.0, gt=0)
    STUCK_PENDING_MINUTES: float = Field(default=30.0, gt=0)
    STUCK_PREPARING_MINUTES: float = Field(default=20.0, gt=0)  # PENDING after Vertex's "Job is preparing."

    @property
    def scheduler_audience(self) -> str | None:
        return self.SCHEDULER_AUDIENCE or self.PUBSUB_PUSH_AUDIENCE

    @field_validator("TRAINMEDIC_STORE")
    @classmethod
    def _store_url(cls, value: str) -> str:
        if value == "firestore" or value.startswith("firestore:"):
            return value
        if value.startswith("sqlite:///") and len(value) > len("sqlite:///"):
            return value
        raise ValueError("must be sqlite:///PATH or firestore")

    @model_validator(mode="after")
    def _push_auth(self) -> Settings:
        if self.PUBSUB_VERIFY_TOKEN and not (self.PUBSUB_PUSH_AUDIENCE and self.PUBSUB_PUSH_SERVICE_ACCOUNT):
            raise ValueError(
                "PUBSUB_VERIFY_TOKEN is true, so PUBSUB_PUSH_AUDIENCE and PUBSUB_PUSH_SERVICE_ACCOUNT are required"
            )
        return self

    @property
    def sqlite_path(self) -> Path | None:
        if self.TRAINMEDIC_STORE.startswith("sqlite:///"):
            return Path(self.TRAINMEDIC_STORE[len("sqlite:///") :])
        return None


def _problems(exc: ValidationError) -> str:
    """Pydantic's errors as "FIELD: problem; ..." (the field path names the setting or routing key)."""
    return "; ".join(f"{'.'.join(str(part) for part in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors())


def _from_environ(model: type[SettingsT], environ: Mapping[str, str]) -> SettingsT:
    known = set(model.model_fields)
    try:
        return model(**{k: v for k, v in environ.items() if k in known})
    except ValidationError as exc:
        raise ConfigError("invalid settings: " + _problems(exc)) from None


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Build Settings from an explicit mapping (os.environ in production, a dict in tests)."""
    return _from_environ(Settings, environ)


# --------------------------------------------------------------------------------------------------- routing


class RouteMatch(BaseModel):
    """All given conditions must hold (an empty match matches every job)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: dict[str, str] = Field(default_factory=dict)
    project: str | None = None
    region: str | None = None
    display_name: str | None = None  # regex, searched in the display name
    failure_class: str | None = None

    @field_validator("display_name")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"bad regex: {exc}") from None
        return value


class Route(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    match: RouteMatch = Field(default_factory=RouteMatch)
    channel: str = Field(min_length=1)
    rerun_allowed: list[str] = Field(default_factory=list)  # Slack user ids (U...) and user group ids (S...)


class RoutingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    default_channel: str = Field(default="#ml-alerts", min_length=1)
    regions: list[str] = Field(default_factory=lambda: ["us-central1"], min_length=1)
    default_project: str | None = None
    routes: list[Route] = Field(default_factory=list)
    class_channels: dict[str, str] = Field(default_factory=dict)
    rerun_allowed: list[str] = Field(default_factory=list)  # default for routes that set none


def load_routing(path: str | None) -> RoutingConfig:
    """Read the routing YAML file; no path means the built-in defaults."""
    if not path:
        return RoutingConfig()
    file = Path(path)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"TRAINMEDIC_CONFIG: cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"TRAINMEDIC_CONFIG: {path} is not valid YAML: {exc}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"TRAINMEDIC_CONFIG: {path} must hold a mapping at the top level")
    try:
        return RoutingConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"TRAINMEDIC_CONFIG: {path}: " + _problems(exc)) from None


class ToolSettings(BaseModel):
    """The subset of settings that command-line tools (history, diagnose --job) need: no Slack secrets."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    TRAINMEDIC_CONFIG: str | None = None
    TRAINMEDIC_STORE: str = "sqlite:///.trainmedic/state.db"
    VERTEX_API_ENDPOINT: str | None = None
    LOGGING_API_ENDPOINT: str | None = None
    QUOTAS_API_ENDPOINT: str | None = None  # Cloud Quotas (a quota's id the tables lack); tests: the stand-in
    GOOGLE_CLOUD_PROJECT: str | None = None
    TRAINMEDIC_KNOWLEDGE: str | None = None


def load_settings_for_tools(environ: Mapping[str, str]) -> ToolSettings:
    return _from_environ(ToolSettings, environ)
