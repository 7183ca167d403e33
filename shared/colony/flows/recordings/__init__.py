"""Recordings: calls in from Drive, and what AGT-006 and AGT-007 make of them (SPEC §6.3).

Owns which Drive folders are an org's (``drive_folders``: proven by a marker file, issue 31),
the watch channels on them (``drive_channels``), the Drive webhook that stores transcripts
(``drive``), transcript checks and splitting (``transcripts``) and the two-pass call
intelligence and follow-up draft (``recording``).

Offers ``drive_folders`` and ``drive_channels`` to the admin API and the data lifecycle
(renewal, and stopping an erased org's channels, handed to erasure by its composition),
``recording`` (the handlers and the ``follow_up`` applier) to ``flows.handlers``, and
``transcripts`` where a transcript is read.
"""
