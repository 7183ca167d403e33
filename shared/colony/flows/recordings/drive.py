"""The Drive webhook (SPEC §6.3; seed §5.3): a push notification → transcripts in GCS → ENT-006.

    Drive push ─► verify the channel token (it names the org) ─► the channel is one we
        created for that org and folder, active and unexpired (``drive_channels``) ─►
        dedupe (channel, message number) ─► list the folder ─► each new transcript → GCS,
        one ENT-006 row ─► ``recording.received`` on colony-recording-intelligence
        (AGT-006, ``recordings.recording``)

Model-free: nothing here (or below it) imports the LLM, context or knowledge packages, so the
webhook's bundle carries no model SDK. A file already stored whose publish may have been lost
(still ``received``) is published again; the handler is idempotent on the notification.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from colony.contracts.events import RecordingReceived
from colony.errors import NotFound, ResponseTooLarge, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.recordings import drive_channels
from colony.ports import DriveClient
from colony.registry.functions import AGENT_TOPICS
from colony.runtime import idempotency
from colony.runtime.transport import publish
from colony.store.deals import deals
from colony.store.recordings import recordings
from colony.webhooks import MAX_TRANSCRIPT_BYTES, folder_of, is_transcript, org_from_token

if TYPE_CHECKING:
    from colony.observability.logs import Headers


def ingest(deps: FlowDeps, headers: Headers, drive: DriveClient) -> dict[str, Any]:
    """Handle one Drive push notification (headers only; Drive sends no body).

    The token is verified first, for the folder the notification names: nothing is read,
    written or listed before it proves which org owns that folder."""
    folder = folder_of(headers.get("X-Goog-Resource-URI"))
    org = org_from_token(
        deps.settings.drive_channel_token, headers.get("X-Goog-Channel-Token"), folder
    )
    assert folder is not None  # a token only verifies for a named folder
    state = headers.get("X-Goog-Resource-State") or ""
    if state == "sync":  # the handshake Drive sends when a channel is created
        return {"status": "sync"}
    channel, number = headers.get("X-Goog-Channel-ID"), headers.get("X-Goog-Message-Number")
    if not channel or not number or not (number.isascii() and number.isdigit()):
        raise ValidationFailed("a Drive notification needs X-Goog-Channel-ID and a message number")
    drive_channels.check(deps, org, channel, folder)
    event_id = f"{channel[:100]}:{number}"
    if idempotency.seen(deps.db, org, "drive-webhook", event_id):
        return {"status": "duplicate"}
    if state in ("trash", "remove"):  # the folder itself went away: nothing to fetch
        idempotency.mark(deps.db, org, "drive-webhook", event_id, detail=state)
        return {"status": state}
    files = [f for f in drive.list_folder(folder) if is_transcript(f)]
    with deps.db.transaction(org) as cur:
        known = recordings.known_files(cur, [f.id for f in files])
    published: list[str] = []
    for file in files:
        row = known.get(file.id)
        if row is not None:
            if row["status"] == "received":  # stored earlier, its publish may have been lost
                published.append(_publish_received(deps, org, row["id"]))
            continue
        recording_id = _store(deps, org, drive, file)
        if recording_id is not None:
            published.append(recording_id)
    idempotency.mark(deps.db, org, "drive-webhook", event_id)
    return {"status": "accepted", "recordings": published}


def _store(deps: FlowDeps, org: str, drive: DriveClient, file: Any) -> str | None:
    uri, status, error = None, "received", None
    try:
        data = drive.download_text(file, MAX_TRANSCRIPT_BYTES)
    except ResponseTooLarge:
        status, error = "failed", f"the transcript is larger than {MAX_TRANSCRIPT_BYTES} bytes"
    except NotFound:
        return None  # deleted between the listing and the download
    else:
        uri = deps.blobs.put(f"transcripts/{org}/{file.id}.txt", data, "text/plain; charset=utf-8")
    with deps.db.transaction(org) as cur:
        # The call's deal is the one open deal its title names; two or more would be a guess.
        candidates = deals.open_for_title(cur, file.name)
        deal_id = candidates[0] if len(candidates) == 1 else None
        recording_id = recordings.add(
            cur,
            org,
            file.id,
            file.name[:500],
            deal_id=deal_id,
            transcript_uri=uri,
            status=status,
            error=error,
        )
    if recording_id is None or status == "failed":
        return None
    return _publish_received(deps, org, recording_id)


def _publish_received(deps: FlowDeps, org: str, recording_id: str) -> str:
    event = RecordingReceived(org_id=org, recording_id=recording_id)
    publish(deps.transport, AGENT_TOPICS["AGT-006"], event)
    return recording_id
