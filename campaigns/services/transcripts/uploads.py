"""The console's transcript upload (issue 24, ask 5): a file imported in the background.

`transcript_upload_start` stores the file's bytes in a `TranscriptUpload` row and sends
`campaigns.tasks.transcript_upload_run` once that commits; the task parses the bytes by
the API's rules (strict JSON: no NaN, no NUL or lone surrogates, nesting bounded) and
calls the very importer `POST /api/import/` calls, so a bad file fails with the same
field-named errors (``turns[3].speaker``) and, the import being one transaction, stores
no campaign. The row keeps the progress the console polls and the errors it shows.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from campaigns.models import TranscriptUpload
from campaigns.services.dispatch import send_on_commit
from campaigns.services.transcripts.common import gc_paused
from campaigns.services.transcripts.importer import import_transcript
from campaigns.validation import ROOT, nesting_error, too_deep, unstorable_text

FIELD = "transcript"  # the upload form's file field: where file-wide errors are named


def upload_limit() -> int:
    """The largest transcript the console takes: the API import's own limit."""
    return settings.BABEL_MAX_IMPORT_BYTES


def too_large_message(size: int) -> str:
    limit = upload_limit()
    return (
        f"The file is {size} bytes; the limit is {limit} bytes ({limit / 2**20:g} MB, "
        "BABEL_MAX_IMPORT_BYTES)."
    )


@transaction.atomic
def transcript_upload_start(*, user, filename: str, data: bytes) -> TranscriptUpload:
    """Keep the file and queue its import. A file over the limit stores nothing."""
    if len(data) > upload_limit():
        raise ValidationError({FIELD: [too_large_message(len(data))]})
    if not data.strip():
        raise ValidationError({FIELD: ["The file is empty."]})
    upload = TranscriptUpload.objects.create(
        user=user,
        filename=(filename or "")[:255],
        size=len(data),
        payload=data,
        message="Waiting for a worker…",
    )
    send_on_commit("transcript_upload_run", str(upload.pk))
    return upload


def parse_transcript(data: bytes) -> object:
    """The file's JSON by the API parser's rules, or a ValidationError naming where."""

    def constant(name: str):
        raise ValueError(f"{name} is not valid JSON")

    try:
        with gc_paused():
            parsed = json.loads(data.decode("utf-8"), parse_constant=constant)
    except RecursionError:
        raise ValidationError({FIELD: [nesting_error()]}) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError({FIELD: [f"Not valid JSON: {exc}"]}) from None
    if too_deep(parsed, settings.BABEL_MAX_JSON_DEPTH):
        raise ValidationError({FIELD: [nesting_error()]})
    found = unstorable_text(parsed)
    if found:
        where, problem = found
        raise ValidationError({FIELD if where == ROOT else where: [problem]})
    return parsed


def _set(upload_id, **fields) -> None:
    TranscriptUpload.objects.filter(pk=upload_id).update(**fields)


def _errors(exc: ValidationError) -> dict[str, list[str]]:
    if hasattr(exc, "error_dict"):
        return {field: list(messages) for field, messages in exc.message_dict.items()}
    return {FIELD: list(exc.messages)}


def transcript_upload_run(*, upload_id) -> TranscriptUpload | None:
    """Import one upload (claimed once: a redelivered task finds it no longer pending)."""
    claimed = TranscriptUpload.objects.filter(
        pk=upload_id, status=TranscriptUpload.Status.PENDING
    ).update(status=TranscriptUpload.Status.RUNNING, progress=5, message="Reading the file…")
    if not claimed:
        return TranscriptUpload.objects.filter(pk=upload_id).first()
    upload = TranscriptUpload.objects.get(pk=upload_id)
    try:
        data = parse_transcript(bytes(upload.payload))
        turns = data.get("turns") if isinstance(data, dict) else None
        count = len(turns) if isinstance(turns, list) else 0
        _set(upload_id, progress=30, message=f"Checking and writing {count} turn(s)…")
        experiment = import_transcript(data=data, owner=upload.user)
    except ValidationError as exc:
        _set(
            upload_id,
            status=TranscriptUpload.Status.FAILED,
            progress=100,
            payload=b"",
            errors=_errors(exc),
            message="Nothing was imported: the file has errors.",
        )
    except Exception:
        _set(
            upload_id,
            status=TranscriptUpload.Status.FAILED,
            progress=100,
            payload=b"",
            message="The import failed on our side; nothing was stored.",
        )
        raise
    else:
        _set(
            upload_id,
            status=TranscriptUpload.Status.SUCCEEDED,
            progress=100,
            payload=b"",
            experiment=experiment,
            message=f"Imported {experiment.name!r}: {count} turn(s).",
        )
    return TranscriptUpload.objects.get(pk=upload_id)
