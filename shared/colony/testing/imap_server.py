"""A local IMAP4rev1 stand-in: just enough of RFC 3501 for ``colony.adapters.imap_mailbox``
(the standard library's ``imaplib``) to log in, select INBOX, find unseen messages, fetch
them and mark them seen, over a real TCP socket on 127.0.0.1.

Spoken: ``CAPABILITY``, ``NOOP``, ``LOGIN``, ``SELECT``, ``UID SEARCH UNSEEN`` (or ``ALL``),
``UID FETCH <uid> (BODY.PEEK[])`` (one uid, or a comma list), ``UID STORE <uid> +FLAGS
(\\Seen)``, ``LOGOUT``. Not spoken: TLS, literals from the client, sequence-number commands,
other folders, search keys beyond those two. ``deliver`` puts a raw RFC 5322 message in the
mailbox; ``seen`` tells which uids were marked.
"""

from __future__ import annotations

import re
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self

from colony.testing.loopback import HOST
from colony.testing.serving import ServingThread

_LINE = re.compile(rb"^(?P<tag>[A-Za-z0-9.]+) (?P<command>[A-Za-z]+)(?: (?P<args>.*))?$")


@dataclass
class _Message:
    uid: int
    raw: bytes
    flags: set[str] = field(default_factory=set)


class ImapServer:
    """One mailbox (INBOX) behind one login, on 127.0.0.1 at ``port`` once entered."""

    host = HOST

    def __init__(self, username: str = "replies@colony.localhost", password: str = "s3cret"):
        self.username, self.password = username, password
        self._messages: list[_Message] = []
        self._lock = threading.Lock()
        self._serving: ServingThread | None = None
        self._port = 0
        self.logins: list[str] = []

    @property
    def port(self) -> int:
        """The port it listens on: bound as port 0 when entered, so no other process can
        have taken it in between (``colony.testing.loopback``)."""
        if self._serving is None:
            raise RuntimeError("ImapServer is not running")
        return self._port

    def deliver(self, raw: bytes) -> int:
        """Put a message in INBOX, unseen; its uid."""
        with self._lock:
            uid = len(self._messages) + 1
            self._messages.append(_Message(uid, raw))
            return uid

    @property
    def seen(self) -> list[int]:
        with self._lock:
            return [m.uid for m in self._messages if "\\Seen" in m.flags]

    def __enter__(self) -> Self:
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                outer._session(self)

        server = socketserver.ThreadingTCPServer((self.host, 0), Handler)
        server.daemon_threads = True
        self._port = int(server.socket.getsockname()[1])
        self._serving = ServingThread(server, "imap-stand-in")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._serving is not None:
            self._serving.close()
            self._serving = None

    def _session(self, h: socketserver.StreamRequestHandler) -> None:
        def say(line: bytes) -> None:
            h.wfile.write(line + b"\r\n")

        authed = selected = False
        say(b"* OK [CAPABILITY IMAP4rev1] colony stand-in ready")
        while line := h.rfile.readline():
            match = _LINE.match(line.rstrip(b"\r\n"))
            if not match:
                say(b"* BAD unparsable line")
                continue
            tag, command = match["tag"], match["command"].upper()
            args = (match["args"] or b"").decode()
            if command == b"CAPABILITY":
                say(b"* CAPABILITY IMAP4rev1 AUTH=PLAIN")
            elif command == b"NOOP":
                pass
            elif command == b"LOGOUT":
                say(b"* BYE logging out")
                say(tag + b" OK LOGOUT completed")
                return
            elif command == b"LOGIN":
                user, _, password = args.partition(" ")
                if (user.strip('"'), password.strip('"')) != (self.username, self.password):
                    say(tag + b" NO [AUTHENTICATIONFAILED] invalid credentials")
                    continue
                authed = True
                self.logins.append(user.strip('"'))
            elif not authed:
                say(tag + b" BAD log in first")
                continue
            elif command == b"SELECT":
                with self._lock:
                    n = len(self._messages)
                say(b"* %d EXISTS" % n)
                say(b"* 0 RECENT")
                say(b"* FLAGS (\\Seen)")
                say(tag + b" OK [READ-WRITE] SELECT completed")
                selected = True
                continue
            elif command == b"UID" and selected:
                self._uid(tag, args, say, h)
                continue
            else:
                say(tag + b" BAD not spoken by this stand-in")
                continue
            say(tag + b" OK " + command + b" completed")

    def _uid(
        self,
        tag: bytes,
        args: str,
        reply: Callable[[bytes], None],
        h: socketserver.StreamRequestHandler,
    ) -> None:
        sub, _, rest = args.partition(" ")
        sub = sub.upper()
        with self._lock:
            messages = list(self._messages)
        by_uid = {m.uid: m for m in messages}
        if sub == "SEARCH":
            wanted = rest.strip().upper()
            found = [m.uid for m in messages if wanted == "ALL" or "\\Seen" not in m.flags]
            reply(b"* SEARCH" + b"".join(b" %d" % u for u in found))
        elif sub == "FETCH":
            uids, _, _ = rest.partition(" ")
            for uid in (int(u) for u in uids.split(",") if u.isdigit()):
                m = by_uid.get(uid)
                if m is None:
                    continue
                h.wfile.write(b"* %d FETCH (UID %d BODY[] {%d}\r\n" % (uid, uid, len(m.raw)))
                h.wfile.write(m.raw + b")\r\n")
        elif sub == "STORE":
            uids, _, change = rest.partition(" ")
            for uid in (int(u) for u in uids.split(",") if u.isdigit()):
                if uid in by_uid and "\\Seen" in change:
                    with self._lock:
                        by_uid[uid].flags.add("\\Seen")
                    reply(b"* %d FETCH (UID %d FLAGS (\\Seen))" % (uid, uid))
        else:
            reply(tag + b" BAD UID " + sub.encode() + b" not spoken")
            return
        reply(tag + b" OK UID " + sub.encode() + b" completed")
