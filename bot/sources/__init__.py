"""Alert sources: what a pushed message is about. Each source recognises its messages, names the job, says when
the job counts as failed (or recovered), and which job's logs hold the evidence. The alert service
(bot.alerting.alerts) keeps only group -> gate -> claim -> post or update.

To add a source: a module here implementing `AlertSource` (bot.sources.base), its tests, and its sink filter in
deploy/setup; then list it in `default_sources()`.
"""

from __future__ import annotations

from bot.sources.audit_log import AuditLogSource
from bot.sources.base import AlertSource, Gate, Irrelevant, Sighting, Subject
from bot.sources.custom_job import CustomJobSource
from bot.sources.monitoring import MonitoringSource
from bot.sources.pipeline import PipelineSource

__all__ = ["AlertSource", "Gate", "Irrelevant", "Sighting", "Subject", "default_sources"]


def default_sources() -> list[AlertSource]:
    """The sources the service reads, in the order they are asked (the first that recognises a message wins)."""
    return [MonitoringSource(), AuditLogSource(), PipelineSource(), CustomJobSource()]
