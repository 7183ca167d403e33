"""The ``DriveClient`` port's conformance suite: the in-memory fake and the REST adapter.

- ``memory``: ``colony.testing.fakes.MemoryDrive``;
- ``http``: ``HttpDrive`` (Drive v3 REST through ``RestClient``, the production code) against
  ``colony.testing.drive_server.DriveServer`` on 127.0.0.1, which speaks Drive's
  ``files.list`` / ``files.export`` / ``files.get?alt=media`` shapes and here pages two files
  at a time, so every listing spans pages. Google Drive itself needs credentials and the
  network; the server is its stand-in (the same one the recording webhook's tests use).

Both are seeded the same way (``add_file``, ``trash``). The contract
(``colony.ports.DriveClient``, as the recording webhook uses it): ``list_folder`` yields every
non-trashed file directly in the folder, oldest first, across all pages, as ``DriveFile``s
with id, name, MIME type and modified time; ``download_text`` gives a Google Doc's text
(exported) or an upload's bytes, ``ResponseTooLarge`` past ``max_bytes`` (exactly
``max_bytes`` is fine) and ``NotFound`` for a file that is not there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from colony.adapters.drive import HttpDrive
from colony.adapters.rest import RestClient
from colony.errors import NotFound, ResponseTooLarge
from colony.ports import DriveClient, DriveFile
from colony.testing.drive_server import GOOGLE_DOC, DriveServer
from colony.testing.fakes import MemoryDrive
from tests.conformance.exercise import exercised

FOLDER, OTHER = "folder-meet-notes", "folder-other"
TRANSCRIPT = "Dana: we need a room-level fact base ✓\nTomás: before October.\n".encode()


@pytest.fixture(params=["memory", "http"])
def seeded(request: pytest.FixtureRequest) -> Iterator[tuple[DriveClient, Any]]:
    """(the client, what seeds it: the fake itself or the stand-in server)."""
    if request.param == "memory":
        memory = MemoryDrive()
        yield memory, memory
        return
    with DriveServer(page_size_cap=2) as server:
        drive = HttpDrive(RestClient("Drive", server.url, lambda: "local-token", attempts=1))
        try:
            yield drive, server
        finally:
            drive.close()


def test_it_is_a_drive_client(seeded: tuple[DriveClient, Any]) -> None:
    """Both methods: the folder's one file listed, then its text downloaded."""
    drive, seed = seeded
    seed.add_file(FOLDER, "f-1", "Transcript", TRANSCRIPT)
    with exercised(DriveClient, drive) as client:
        [file] = client.list_folder(FOLDER)
        assert (file.id, file.name, file.mime_type) == ("f-1", "Transcript", GOOGLE_DOC)
        assert client.download_text(file, max_bytes=10_000) == TRANSCRIPT


def test_a_folder_lists_its_live_files_oldest_first_across_pages(
    seeded: tuple[DriveClient, Any],
) -> None:
    drive, seed = seeded
    for n in range(5):
        seed.add_file(FOLDER, f"doc-{n}", f"Meeting {n} - Notes by Gemini", b"notes")
    seed.add_file(FOLDER, "upload-1", "notes.txt", b"plain", mime_type="text/plain")
    seed.add_file(OTHER, "elsewhere", "Other folder", b"x")
    seed.trash("doc-2")
    files = list(drive.list_folder(FOLDER))
    assert [f.id for f in files] == ["doc-0", "doc-1", "doc-3", "doc-4", "upload-1"]
    assert all(isinstance(f, DriveFile) for f in files)
    assert files[0].name == "Meeting 0 - Notes by Gemini" and files[0].mime_type == GOOGLE_DOC
    assert files[-1].mime_type == "text/plain"
    assert all(isinstance(f.modified_time, str) and f.modified_time for f in files)


def test_an_empty_folder_lists_nothing(seeded: tuple[DriveClient, Any]) -> None:
    drive, seed = seeded
    seed.add_file(OTHER, "elsewhere", "Other folder", b"x")
    assert list(drive.list_folder(FOLDER)) == []


@pytest.mark.parametrize("mime_type", [GOOGLE_DOC, "text/plain"])
def test_a_files_text_is_downloaded_up_to_its_limit(
    seeded: tuple[DriveClient, Any], mime_type: str
) -> None:
    drive, seed = seeded
    seed.add_file(FOLDER, "f-1", "Transcript", TRANSCRIPT, mime_type=mime_type)
    [file] = drive.list_folder(FOLDER)
    assert drive.download_text(file, max_bytes=10_000) == TRANSCRIPT
    assert drive.download_text(file, max_bytes=len(TRANSCRIPT)) == TRANSCRIPT
    with pytest.raises(ResponseTooLarge):
        drive.download_text(file, max_bytes=len(TRANSCRIPT) - 1)


def test_a_file_that_is_not_there_is_not_found(seeded: tuple[DriveClient, Any]) -> None:
    drive, _ = seeded
    with pytest.raises(NotFound):
        drive.download_text(DriveFile("no-such-file", "Gone", GOOGLE_DOC), max_bytes=1000)
