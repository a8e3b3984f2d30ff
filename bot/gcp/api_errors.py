"""Google's failures as our errors: JobNotFound, ApiPermissionDenied (naming the missing permission when Google says
it), ApiUnavailable (transient: 429, 5xx, timeouts, connection errors) or ApiError. Shared by every Google client."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from bot.errors import ApiError, ApiPermissionDenied, ApiUnavailable

# "Permission 'aiplatform.customJobs.get' denied on ...", "... does not have storage.objects.get access"
_PERMISSION = re.compile(r"(?<![\w./@-])([a-z][a-zA-Z0-9]*\.[a-z][a-zA-Z0-9]*\.[a-z][a-zA-Z0-9]*)(?![\w./@-])")
_NOT_PERMISSION_SUFFIXES = ("com", "net", "org", "io", "dev", "app")


def permission_from(message: str, metadata: Mapping[str, str] | None = None) -> str | None:
    """The IAM permission a Google error names ('aiplatform.customJobs.get'), if it names one."""
    permission = (metadata or {}).get("permission")
    if isinstance(permission, str) and permission:
        return permission
    for candidate in _PERMISSION.findall(message or ""):
        if candidate.rsplit(".", 1)[1] not in _NOT_PERMISSION_SUFFIXES:
            return candidate
    return None


def api_error_from(exc: BaseException, *, action: str, not_found: type[ApiError] = ApiError) -> ApiError | None:
    """Translate a google-api-core, google-auth or requests exception into our ApiError (None if foreign).

    Args:
        exc: What the Google client library raised.
        action: What was being done, for the message ("get projects/p/.../customJobs/1").
        not_found: The error to raise for HTTP 404 (JobNotFound for job look-ups).
    """
    import requests
    from google.api_core import exceptions as api_exceptions
    from google.auth import exceptions as auth_exceptions

    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        detail = f"{action}: {exc.code} {exc.message}"
        if isinstance(exc, api_exceptions.NotFound):
            return not_found(detail)
        if isinstance(exc, api_exceptions.Forbidden | api_exceptions.Unauthorized):
            return ApiPermissionDenied(detail, permission_from(exc.message, exc.metadata))
        if isinstance(exc, api_exceptions.ServerError | api_exceptions.TooManyRequests):
            return ApiUnavailable(detail)
        return ApiError(detail)
    if isinstance(exc, api_exceptions.RetryError | requests.RequestException | ConnectionError | TimeoutError):
        return ApiUnavailable(f"{action}: {type(exc).__name__}: {exc}")
    if isinstance(exc, auth_exceptions.GoogleAuthError):
        transient = exc.retryable or isinstance(exc, auth_exceptions.TransportError | auth_exceptions.TimeoutError)
        kind = ApiUnavailable if transient else ApiError
        return kind(f"{action}: Google credentials: {type(exc).__name__}: {exc}")
    return None


@contextmanager
def google_errors(action: str, *, not_found: type[ApiError] = ApiError) -> Iterator[None]:
    """Run the block with Google's failures raised as ours (api_error_from); anything foreign passes unchanged.

    `with google_errors(f"get {name}", not_found=JobNotFound): job = client.get_custom_job(name=name)`
    """
    try:
        yield
    except Exception as exc:
        error = api_error_from(exc, action=action, not_found=not_found)
        if error is None:
            raise
        raise error from exc
