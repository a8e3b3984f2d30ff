"""A class's evidence and score: the signals it matched (their lines and captured details), combined as a
noisy-OR of their weights."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.diagnosis.knowledge_schema import FailureClass, Signal

DECISION_FLOOR = 0.35  # below this, nothing supports a diagnosis


@dataclass
class Hit:
    signal: Signal
    lines: list[int]
    details: dict[str, str] = field(default_factory=dict)


@dataclass
class ClassResult:
    failure_class: FailureClass
    hits: list[Hit] = field(default_factory=list)

    @property
    def score(self) -> float:
        miss = 1.0
        for hit in self.hits:
            miss *= 1.0 - hit.signal.weight
        return 1.0 - miss

    @property
    def decisive_score(self) -> float:
        """The score without hint signals (words that point at the class without proving it)."""
        miss = 1.0
        for hit in self.hits:
            if not hit.signal.hint:
                miss *= 1.0 - hit.signal.weight
        return 1.0 - miss

    @property
    def lines(self) -> list[int]:
        return sorted({i for hit in self.hits for i in hit.lines})


def facts_allow(signal: Signal, facts: frozenset[str]) -> bool:
    return all(fact in facts for fact in signal.facts) and not any(fact in facts for fact in signal.unless_facts)
