"""The ``Sender`` port's conformance suite, against a real SMTP server (aiosmtpd) on
127.0.0.1 in the two shapes production uses, and against Resend's HTTP API:

- ``plain``: no TLS, no login (the local server ``make run`` starts);
- ``relay``: STARTTLS required and AUTH required, as a Google Workspace SMTP relay or a
  provider's SMTP endpoint is (the server's self-signed certificate is the trusted root);
- ``resend``: the official ``resend`` SDK against ``colony.testing.resend_server``, a local
  stand-in for Resend's REST API (stood in: Resend itself; real: the SDK, its HTTP, ours).

The contract (``colony.ports.Sender``): an accepted message arrives once, as sent (our
Message-ID, the extra headers, a UTF-8 body; DKIM-signed with its key where the sender writes
the bytes, and the signature verifies); a permanent refusal is ``MailRejected``; a
transient one, or no server, is ``UpstreamError``; a refusal of our own setup (credentials,
TLS) is ``ConfigError``. No test double: the real adapter and a real server are both here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from colony.adapters.resend_mail import ResendMail
from colony.adapters.smtp import SmtpSender
from colony.errors import ConfigError, UpstreamError, ValidationFailed
from colony.policy.sending_domains import dkim_record
from colony.ports import DkimKey, Mail, MailRejected, Sender
from colony.runtime.dkim_keys import new_key
from colony.testing.loopback import closed_port
from colony.testing.resend_server import API_KEY, ResendServer
from colony.testing.smtp_server import Received, SmtpServer, dkim_verifies

CREDENTIALS = ("colony-relay", "s3cret-relay-password")


@dataclass
class Harness:
    kind: str
    sender: Sender
    server: SmtpServer | ResendServer
    permanent: str  # what a permanent refusal's message names (the SMTP code, Resend's)
    transient: str


@pytest.fixture(params=["plain", "relay", "resend"])
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    if request.param == "resend":
        with ResendServer() as api:
            yield Harness("resend", ResendMail(API_KEY, api_url=api.base_url), api, "422", "429")
        return
    relay = request.param == "relay"
    server = SmtpServer(starttls=relay, credentials=CREDENTIALS if relay else None)
    with server:
        if relay:
            sender = SmtpSender(
                server.host,
                server.port,
                username=CREDENTIALS[0],
                password=CREDENTIALS[1],
                ca_file=server.ca_file,
                timeout=10,
            )
        else:
            sender = SmtpSender(server.host, server.port, starttls=False, timeout=10)
        yield Harness(request.param, sender, server, "550", "451")


def mail(to: str = "dana@granitepeak.example", **changes: object) -> Mail:
    fields: dict[str, object] = {
        "message_id": "<ob-123.step-1@colony.example>",
        "sender": "Colony <outreach@zoomprop.example>",
        "to": to,
        "subject": "Lease costs at Granite Peak — a thought",
        "text": "Hi Dana,\n\nUtilisation data cut costs 18% at a peer — café included ✓.\n",
        "headers": {
            "List-Unsubscribe": "<https://colony.example/u?t=abc>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
    }
    fields.update(changes)
    return Mail(**fields)  # type: ignore[arg-type]


def test_an_accepted_message_arrives_once_as_sent(harness: Harness) -> None:
    assert isinstance(harness.sender, Sender)
    harness.sender.send(mail())
    (got,) = harness.server.received
    assert got.rcpt_tos == ("dana@granitepeak.example",)
    message = got.message
    assert message["Message-ID"] == "<ob-123.step-1@colony.example>"
    assert message["Subject"] == "Lease costs at Granite Peak — a thought"
    assert message["List-Unsubscribe"] == "<https://colony.example/u?t=abc>"
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert message["Date"]
    assert "café included ✓" in message.get_content()
    if isinstance(harness.server, ResendServer):  # the key went as a bearer token
        (call,) = harness.server.requests_to("resend.emails.send")
        assert call.header("authorization") == f"Bearer {API_KEY}"
        assert call.header("idempotency-key") == "<ob-123.step-1@colony.example>"
        return
    relay = harness.server.ca_file is not None
    assert (got.tls, got.login) == ((True, CREDENTIALS[0]) if relay else (False, None))


KEY = new_key()
SELECTOR = "colony0a1b2c3d"
PUBLISHED = {f"{SELECTOR}._domainkey.zoomprop.example": [dkim_record(KEY.public_key)]}


def test_a_message_with_a_key_arrives_signed_where_the_sender_writes_its_bytes(
    harness: Harness,
) -> None:
    """SMTP hands over the bytes, so it signs them (issue 39 item 3); Resend's API takes
    fields and signs with the key of the domain verified at Resend, so ours never travels."""
    harness.sender.send(mail(dkim=DkimKey("zoomprop.example", SELECTOR, KEY.private_pem)))
    (got,) = harness.server.received
    if isinstance(harness.server, ResendServer):
        assert "DKIM-Signature" not in got.message
        (call,) = harness.server.requests_to("resend.emails.send")
        assert "PRIVATE KEY" not in json.dumps(call.body)
        return
    assert isinstance(got, Received)
    signature = " ".join(str(got.message["DKIM-Signature"]).split())
    assert "d=zoomprop.example;" in signature and f"s={SELECTOR};" in signature
    assert "c=relaxed/relaxed;" in signature
    assert dkim_verifies(got.raw, lambda name: PUBLISHED.get(name, [])) is True
    altered = got.raw.replace(b"Lease costs", b"Lease savings")
    assert dkim_verifies(altered, lambda name: PUBLISHED.get(name, [])) is False
    assert got.message["Subject"] == "Lease costs at Granite Peak — a thought"
    assert "café included ✓" in got.message.get_content()


def test_a_key_for_another_domain_than_the_senders_is_refused() -> None:
    with pytest.raises(ValidationFailed, match="cannot be signed for"):
        mail(dkim=DkimKey("rival.example", SELECTOR, KEY.private_pem))


def test_a_retried_send_reaches_the_recipient_once_where_the_server_can_tell(
    harness: Harness,
) -> None:
    """Resend answers a repeated Idempotency-Key (our Message-ID) with the first send; SMTP
    cannot tell, so there the send step's lease is what keeps a message single."""
    harness.sender.send(mail())
    harness.sender.send(mail())
    assert len(harness.server.received) == (1 if harness.kind == "resend" else 2)


def test_tags_travel_with_the_message_only_where_the_provider_echoes_them(
    harness: Harness,
) -> None:
    harness.sender.send(mail(tags={"org_id": "org.a", "outbox_id": "ob-123"}))
    (got,) = harness.server.received
    assert "org_id" not in got.message and "X-Tags" not in got.message
    if isinstance(harness.server, ResendServer):
        assert got.tags == {"org_id": "b32-n5zgoltb", "outbox_id": "ob-123"}


def test_a_permanent_refusal_is_mail_rejected(harness: Harness) -> None:
    with pytest.raises(MailRejected, match=harness.permanent):
        harness.sender.send(mail("bounce-me@granitepeak.example"))
    assert harness.server.received == []


def test_a_transient_refusal_is_an_upstream_error(harness: Harness) -> None:
    with pytest.raises(UpstreamError, match=harness.transient):
        harness.sender.send(mail("defer-me@granitepeak.example"))
    assert harness.server.received == []


def test_no_server_is_an_upstream_error() -> None:
    sender = SmtpSender("127.0.0.1", closed_port(), starttls=False, timeout=2)
    with pytest.raises(UpstreamError, match="cannot reach"):
        sender.send(mail())


def test_resend_sorts_a_wrong_key_a_dead_api_and_an_outage() -> None:
    with ResendServer() as api:
        url = api.base_url
        with pytest.raises(ConfigError, match="403"):
            ResendMail("re_wrong", api_url=api.base_url).send(mail())
        sender = ResendMail(API_KEY, api_url=api.base_url)
        api.fail(503)
        with pytest.raises(UpstreamError, match="503"):
            sender.send(mail())
        assert api.received == []
    with pytest.raises(UpstreamError, match="retry later"):  # nothing listens there now
        ResendMail(API_KEY, api_url=url, timeout=2).send(mail())
    with pytest.raises(ConfigError, match="COLONY_RESEND_API_KEY"):
        ResendMail("")


def test_the_relay_refuses_a_wrong_setup_as_our_fault() -> None:
    with SmtpServer(starttls=True, credentials=CREDENTIALS) as server:
        wrong_password = SmtpSender(
            server.host,
            server.port,
            username="colony-relay",
            password="nope",
            ca_file=server.ca_file,
        )
        with pytest.raises(ConfigError, match="login"):
            wrong_password.send(mail())
        untrusted = SmtpSender(server.host, server.port, username="u", password="p", timeout=5)
        with pytest.raises(ConfigError, match="certificate"):
            untrusted.send(mail())
        no_tls = SmtpSender(server.host, server.port, starttls=False, timeout=5)
        with pytest.raises(ConfigError, match="530"):
            no_tls.send(mail())
        assert server.received == []
    with pytest.raises(ConfigError, match="never sent without STARTTLS"):
        SmtpSender("127.0.0.1", 25, username="u", password="p", starttls=False)


def test_header_injection_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValidationFailed, match="line breaks"):
        mail(subject="Hi\r\nBcc: everyone@example.com")
    with pytest.raises(ValidationFailed, match="Message-ID"):
        mail(message_id="no-brackets@colony.example")
