"""Recordings: calls in from Drive, and what AGT-006 and AGT-007 make of them (SPEC §6.3).

Owns which Drive folders are an org's (``drive_folders``: proven by a marker file, issue 31),
the watch channels on them (``drive_channels``), the Drive webhook that stores transcripts
(``drive``), transcript checks and splitting (``transcripts``), AGT-006's two-pass call
intelligence (``recording``) and AGT-007's follow-up draft (``follow_up``).

Offers ``drive_folders`` and ``drive_channels`` to the admin API and the data lifecycle
(renewal, and stopping an erased org's channels, handed to erasure by its composition),
``recording`` and ``follow_up`` (their handlers; the ``follow_up`` applier) to
``flows.handlers`` and ``runtime.appliers``, and ``transcripts`` where a transcript is read.
"""
