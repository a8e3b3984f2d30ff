"""Command probe (issue 11): what a real permission or quota failure gets to run.

Run: .venv/bin/python benchmarks/probe_commands.py [--splits train dev handwritten test] [--misses]

For every corpus case labelled permission_denied or quota_exhausted, classified as the bot would (plain text, and
beside a known CustomJob: project, region, service account, one pool of 8 A100s running a container image, or a
Python package on a prebuilt image), it counts:

- permission: a grant (`add-iam-policy-binding`) of a predefined role, never a basic one (owner/editor/viewer),
  with every name filled (else "a name left to fill": the resource or grantee neither the log nor the job names);
- quota: a Cloud Quotas preference (`gcloud beta quotas preferences create`) with its quota id filled;
  a stockout (capacity, not a limit) or a shared file's own download limit must get no preference and is counted apart;
- every command: placeholders left (`PROJECT_ID`, `QUOTA_ID`...) that the log or the job could have filled.

`--misses` lists the train/dev/hand-written cases without a grant or preference (never the test split: its figures
are printed as counts only). Figures go to README ("Commands in the alert").
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_accuracy import SPLITS, load_cases  # noqa: E402
from bot.diagnosis.classifier import Classifier  # noqa: E402
from bot.diagnosis.evidence.audit_lookup import principal_to_ask_about  # noqa: E402
from bot.diagnosis.knowledge import KnowledgeBase, load_knowledge  # noqa: E402
from bot.intake.log_input import text_to_lines  # noqa: E402
from bot.models import Diagnosis, JobInfo, WorkerPool  # noqa: E402

_JOB = JobInfo(
    name="projects/123456789012/locations/us-central1/customJobs/8501620632646057984",
    job_id="8501620632646057984",
    project="acme-ml",
    region="us-central1",
    display_name="probe",
    state="JOB_STATE_FAILED",
    service_account="trainer@acme-ml.iam.gserviceaccount.com",
    base_output_directory="gs://acme-ml-outputs/8501620632646057984",  # the SDK sets it from the staging bucket
)
_POOL = {"machine_type": "a2-highgpu-8g", "accelerator_type": "NVIDIA_TESLA_A100", "accelerator_count": 8}
# A CustomJob runs either a container or a Python package (on a prebuilt executor image): both kinds, as the
# CustomJob resource gives them (its name holds the project number)
JOBS = {
    "log alone": None,
    "beside a known container CustomJob": _JOB.model_copy(
        update={"worker_pools": [WorkerPool(**_POOL, image_uri="us-central1-docker.pkg.dev/acme-ml/trainers/bert:1")]}
    ),
    "beside a known Python-package CustomJob": _JOB.model_copy(
        update={
            "worker_pools": [
                WorkerPool(
                    **_POOL,
                    image_uri="us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-1:latest",
                    package_uris=("gs://acme-ml-staging/trainer-0.1.tar.gz",),
                )
            ]
        }
    ),
}
# knowledge/quota_exhausted.yaml: capacity, addresses or a shared file's own download limit - no quota of the project
NOT_A_PROJECT_QUOTA = ("stockout", "cluster_capacity", "ip_range_exhausted", "shared_file_limit")
BASIC_ROLE = re.compile(r"--role=roles/(?:owner|editor|viewer)\b")
GRANT = re.compile(r"\badd-iam-policy-binding\b.*--role=roles/\S+")
PREFERENCE = re.compile(r"\bquotas preferences create\b.*--quota-id=(?!QUOTA_ID\b)\S+")


def outcome(diagnosis: Diagnosis, label: str, kb: KnowledgeBase) -> str:
    commands = [c.command for c in diagnosis.commands]
    if diagnosis.failure_class != label:
        return f"classified {diagnosis.failure_class}"
    if label == "permission_denied":
        grants = [c for c in commands if GRANT.search(c)]
        if any(BASIC_ROLE.search(c) for c in grants):
            return "basic role"
        if grants:
            # the resource or the grantee left for the user to fill (no log or job named it): a partial grant
            left = kb.unfilled
            return "grant, a name left to fill" if any(left.search(c) for c in grants) else "grant"
        # a variant of the class (its own title) names a cause no role fixes: OAuth scopes, no credentials...
        return "no grant, cause named: not IAM" if diagnosis.title != kb[label].title else "no grant"
    variants = kb[label].variants
    if diagnosis.title in {variants[name].title for name in NOT_A_PROJECT_QUOTA if name in variants}:
        preference = any(PREFERENCE.search(c) for c in commands)
        return "not a project quota WITH preference" if preference else "not a project quota, no preference"
    return "preference" if any(PREFERENCE.search(c) for c in commands) else "no preference"


def placeholders(diagnosis: Diagnosis, kb: KnowledgeBase) -> set[str]:
    return {p for c in diagnosis.commands for p in kb.unfilled.findall(c.command)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", nargs="+", default=["train", "dev", "handwritten", "test"], choices=list(SPLITS))
    parser.add_argument("--misses", action="store_true", help="list the misses of train/dev/hand-written cases")
    args = parser.parse_args()
    kb = load_knowledge()
    classifier = Classifier(kb)
    for split in args.splits:
        cases = [c for c in load_cases(SPLITS[split]) if c["class"] in ("permission_denied", "quota_exhausted")]
        for where, job in JOBS.items():
            counts: Counter[tuple[str, bool, str]] = Counter()
            left: Counter[str] = Counter()
            audit: Counter[str] = Counter()  # outcomes for which a live alert would read the audit logs first
            misses = []
            for case in cases:
                diagnosis = classifier.classify(text_to_lines(case["text"]), job)
                gcp = bool(case.get("gcp"))
                got = outcome(diagnosis, case["class"], kb)
                counts[(case["class"], gcp, got)] += 1
                if gcp and job is not None and principal_to_ask_about(diagnosis, kb):
                    audit[got] += 1
                left.update(placeholders(diagnosis, kb))
                if (got in ("no grant", "no preference") or got.startswith("classified")) and split != "test":
                    misses.append((case, diagnosis, got))
            print(f"\n{split} ({len(cases)} cases), {where}")
            for label in ("permission_denied", "quota_exhausted"):
                for gcp in (True, False):
                    row = {got: n for (lab, g, got), n in counts.items() if lab == label and g == gcp}
                    if row:
                        total = sum(row.values())
                        wording = "Google Cloud wording" if gcp else "other wording"
                        print(
                            f"  {label:<18} {wording:<21} {total:>3}: "
                            + ", ".join(f"{got} {n}" for got, n in sorted(row.items(), key=lambda kv: -kv[1]))
                        )
            print(
                "  placeholders left in commands: " + (", ".join(f"{p} {n}" for p, n in left.most_common()) or "none")
            )
            if audit:  # bot/alerting/refused_calls.py: the refused check then names the permission and resource
                print(
                    "  Google Cloud cases a live alert reads the audit logs for: "
                    + ", ".join(f"{got} {n}" for got, n in audit.most_common())
                )
            if args.misses and job is not None:
                for case, diagnosis, got in misses:
                    first = next((e for e in diagnosis.evidence), case["text"].splitlines()[0])[:150]
                    where = f"as {diagnosis.failure_class} gcp={case.get('gcp')}"
                    print(f"    {case['id']:<28} {got:<14} {where:<36} {first}")


if __name__ == "__main__":
    main()
