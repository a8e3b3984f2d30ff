"""Every error trainmedic raises on purpose. Callers catch at the level they can act on.

BotError
 +-- KnowledgeBaseError      a knowledge file is invalid (names the file and the field)
 +-- LogInputError           a log file could not be read or parsed
 +-- ConfigError             a setting or the routing file is missing or invalid
 +-- InvalidPushMessage      a Pub/Sub push is malformed (permanent: ack it, log why)
 +-- PushAuthError           the push's OIDC token is missing, forged, expired or not ours
 +-- ApiError                a Google or Slack API call failed
 |    +-- ApiUnavailable     transient: network, 5xx, 429, timeout (retry later)
 |    +-- ApiPermissionDenied  the bot's identity lacks a permission (names it when known)
 |    +-- JobNotFound        no such CustomJob
 +-- StoreUnavailable        the state store cannot be reached (transient)
 +-- StoreRejected           the state store refused the data for good (too large, an invalid key)
 +-- ActionRefused           a Slack action is not allowed (who may, and why not)
"""

from __future__ import annotations


class BotError(Exception):
    """Root of trainmedic's errors."""


class KnowledgeBaseError(BotError):
    """`path`, `field` and `problem` name the first problem; `problems` holds every one as (path, field, problem).

    With several problems the message lists them all, one a line.
    """

    def __init__(
        self, path: str, field: str, problem: str, *, problems: list[tuple[str, str, str]] | None = None
    ) -> None:
        self.path = path
        self.field = field
        self.problem = problem
        self.problems: list[tuple[str, str, str]] = problems or [(path, field, problem)]
        if len(self.problems) > 1:
            super().__init__("\n".join(f"{p}: {f}: {text}" for p, f, text in self.problems))
        else:
            super().__init__(f"{path}: {field}: {problem}")


class LogInputError(BotError):
    pass


class ConfigError(BotError):
    pass


class InvalidPushMessage(BotError):
    pass


class PushAuthError(BotError):
    def __init__(self, reason: str, *, forbidden: bool = False) -> None:
        self.reason = reason
        self.forbidden = forbidden  # True: a valid token that is not ours (403); False: no/bad token (401)
        super().__init__(reason)


class ApiError(BotError):
    pass


class ApiUnavailable(ApiError):
    pass


class ApiPermissionDenied(ApiError):
    def __init__(self, message: str, permission: str | None = None) -> None:
        self.permission = permission
        super().__init__(message)


class JobNotFound(ApiError):
    pass


class StoreUnavailable(BotError):
    pass


class StoreRejected(BotError):
    pass


class ActionRefused(BotError):
    pass
